// KafkaJS consumers for tests/clients/test_js.py (classic protocol, eager: KafkaJS has no other).
// Usage: node kafkajs.mjs eager BOOTSTRAP GROUP TOPIC.
//
// KafkaJS has no rebalance callbacks either; its instrumentation events come at the right moments:
// REBALANCING before it rejoins (eager: everything is given up), GROUP_JOIN once SyncGroup has given
// it its new assignment. Each batch is committed (commitOffsets) before the next one is fetched.
import kafkajs from 'kafkajs'
import { Book, partitionsOf, serve } from './protocol.mjs'

const { Kafka, logLevel } = kafkajs
const [mode, bootstrap, group, topic] = process.argv.slice(2)
if (mode !== 'eager') throw new Error(`KafkaJS speaks the classic eager protocol only, not ${mode}`)
const members = new Map()

class Member {
  constructor (name) {
    this.book = new Book(name)
    const kafka = new Kafka({ clientId: name, brokers: [bootstrap], logLevel: logLevel.ERROR, retry: { retries: 10 } })
    // A short fetch wait: KafkaJS notices a rebalance only between fetches (the default waits 5 s).
    this.consumer = kafka.consumer({ groupId: group, sessionTimeout: 6000, heartbeatInterval: 500, rebalanceTimeout: 10000, maxWaitTimeInMs: 500 })
    const { REBALANCING, GROUP_JOIN, CRASH } = this.consumer.events
    this.consumer.on(REBALANCING, () => this.book.become(new Set()))
    this.consumer.on(GROUP_JOIN, ({ payload }) => {
      const assigned = (payload.memberAssignment[topic] ?? []).map(p => ({ topic, partitions: [p] }))
      this.book.become(partitionsOf(assigned, topic))
    })
    this.consumer.on(CRASH, ({ payload }) => this.book.event('error', { error: String(payload.error?.stack ?? payload.error) }))
  }

  async start () {
    await this.consumer.connect()
    await this.consumer.subscribe({ topics: [topic], fromBeginning: true })
    await this.consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const p = Number(batch.partition)
        this.book.records(batch.messages.map(m => [p, Number(m.offset)]))
        await this.commit()
      }
    })
  }

  // A failure is reported and the offsets stay pending for the next batch (or the leave).
  async commit () {
    const chosen = [...this.book.pending]
    if (!chosen.length) return
    try {
      await this.consumer.commitOffsets(chosen.map(([partition, offset]) => ({ topic, partition, offset: String(offset) })))
      this.book.event('commit', { offsets: Object.fromEntries(chosen) })
      for (const [p, o] of chosen) {
        if (this.book.pending.get(p) === o) this.book.pending.delete(p)
      }
    } catch (error) {
      this.book.event('commit_error', { offsets: Object.fromEntries(chosen), error: `${error.name} ${error.type ?? ''} ${error.message}` })
    }
  }

  async leave () {
    await this.consumer.stop()
    await this.commit()
    this.book.become(new Set())
    await this.consumer.disconnect()
    this.book.event('left')
  }
}

serve({
  join (name) {
    const member = new Member(name)
    members.set(name, member)
    member.start().catch(error => member.book.event('error', { error: String(error?.stack ?? error) }))
  },
  async leave (name) {
    const member = members.get(name)
    members.delete(name)
    await member.leave()
  },
  async quit () {
    await Promise.allSettled([...members.values()].map(m => m.consumer.disconnect()))
  }
})
