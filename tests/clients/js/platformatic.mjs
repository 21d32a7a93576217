// @platformatic/kafka consumers for tests/clients/test_js.py.
// Usage: node platformatic.mjs MODE BOOTSTRAP GROUP TOPIC, MODE "consumer" (KIP-848) or "eager" (classic).
//
// The client has no rebalance callbacks, so ownership is taken from its own state at the moments it
// tells the coordinator: with KIP-848, the assignments it reports when each ConsumerGroupHeartbeat
// starts (a revocation is acknowledged only by such a heartbeat); with the classic protocol, which is
// eager, everything is given up when it rejoins (REBALANCE_IN_PROGRESS, before its JoinGroup) and the
// new assignment is taken when its SyncGroup completes.
import { Consumer } from '@platformatic/kafka'
import { Book, partitionsOf, serve } from './protocol.mjs'

const [mode, bootstrap, group, topic] = process.argv.slice(2)
const members = new Map()

class Member {
  constructor (name) {
    this.book = new Book(name)
    this.committing = false
    this.closing = false
    const groupOptions = mode === 'consumer'
      ? { groupProtocol: 'consumer' }
      : { groupProtocol: 'classic', sessionTimeout: 6000, heartbeatInterval: 500, rebalanceTimeout: 10000 }
    this.consumer = new Consumer({
      clientId: name,
      groupId: group,
      bootstrapBrokers: [bootstrap],
      autocommit: false,
      ...groupOptions
    })
    if (mode === 'consumer') {
      this.consumer.on('consumer:heartbeat:start', () => this.observe())
    } else {
      this.consumer.on('consumer:group:rebalance', () => this.book.become(new Set()))
      this.consumer.on('consumer:group:join', payload => this.book.become(partitionsOf(payload.assignments, topic)))
    }
  }

  observe () {
    if (!this.closing) this.book.become(partitionsOf(this.consumer.assignments, topic))
  }

  async start () {
    this.stream = await this.consumer.consume({ topics: [topic], mode: 'committed', fallbackMode: 'earliest' })
    this.stream.on('data', message => {
      // The stream goes on delivering what it fetched for a partition after the partition has moved
      // to another member; like a careful application, drop records of partitions not owned now.
      if (mode === 'consumer') this.observe()
      if (!this.book.owned.has(Number(message.partition))) return
      this.batch ??= []
      this.batch.push([Number(message.partition), Number(message.offset)])
      if (this.batch.length === 1) setImmediate(() => this.flush())
    })
    this.stream.on('error', error => this.book.event('error', { error: String(error?.stack ?? error) }))
  }

  async flush () {
    const batch = this.batch ?? []
    this.batch = null
    this.book.records(batch)
    await this.commit()
  }

  // One commit at a time; a failure is reported and the offsets stay pending for the next one.
  async commit (only = null) {
    if (this.committing) return
    const chosen = [...this.book.pending].filter(([p]) => only === null || only.has(p))
    if (!chosen.length) return
    this.committing = true
    try {
      await this.consumer.commit({
        offsets: chosen.map(([partition, offset]) => ({ topic, partition, offset: BigInt(offset), leaderEpoch: -1 }))
      })
      this.book.event('commit', { offsets: Object.fromEntries(chosen) })
      for (const [p, o] of chosen) {
        if (this.book.pending.get(p) === o) this.book.pending.delete(p)
      }
    } catch (error) {
      const codes = (error.errors ?? []).map(e => e.apiId ?? e.code ?? e.message)
      this.book.event('commit_error', { offsets: Object.fromEntries(chosen), error: `${error.message} ${JSON.stringify(codes)}` })
    } finally {
      this.committing = false
    }
    if (this.book.pending.size && this.batch === null && !this.closing) setTimeout(() => this.commit(), 100)
  }

  async leave () {
    // Like a revoke callback: commit what is pending, give everything up, then leave the group.
    while (this.committing) await new Promise(resolve => setTimeout(resolve, 10))
    this.closing = true
    await this.commit()
    this.book.become(new Set())
    await this.consumer.close(true)
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
    await Promise.allSettled([...members.values()].map(m => m.consumer.close(true)))
  }
})
