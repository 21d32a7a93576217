// KafkaJS running the exactly-once scenario of issue #24 through the sidecar (tests/txn/test_kafkajs_eos.py):
// a read_committed consumer (classic eager, KafkaJS has no other) and a transactional producer whose
// transaction.sendOffsets puts the group's offsets in each transaction. One transaction is aborted
// midway (its records sent first) and the consumer rewound; once, a second producer with the same
// transactionalId fences the first mid-transaction. Prints one line per event, exits 0 once RECORDS
// records were committed in transactions.
// Usage: node kafkajs_eos.mjs BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID RECORDS
import kafkajs from 'kafkajs'

const { Kafka, logLevel } = kafkajs
const [bootstrap, input, output, group, transactionalId, recordsArg] = process.argv.slice(2)
const expected = Number(recordsArg)
const kafka = new Kafka({ clientId: 'eos', brokers: [bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 8 } })
const admin = kafka.admin()

async function transactionalProducer () {
  const producer = kafka.producer({ transactionalId, maxInFlightRequests: 1, idempotent: true, transactionTimeout: 20000 })
  await producer.connect()
  return producer
}

async function committed () {
  const [entry] = await admin.fetchOffsets({ groupId: group, topics: [input], resolveOffsets: false })
  return Object.fromEntries(entry.partitions.map(p => [p.partition, p.offset]))
}

let producer = await transactionalProducer()
await admin.connect()
const consumer = kafka.consumer({ groupId: group, sessionTimeout: 6000, heartbeatInterval: 500, maxWaitTimeInMs: 200, maxBytesPerPartition: 64 })
await consumer.connect()
await consumer.subscribe({ topics: [input], fromBeginning: true })
let done = 0
let transactions = 0
let aborted = false
let fenced = false
let finish
const finished = new Promise(resolve => { finish = resolve })

async function rewindTo (before, why, partition, firstOffset) {
  const now = await committed()
  if (JSON.stringify(now) !== JSON.stringify(before)) {
    console.log(`MOVED by ${why}: ${JSON.stringify(before)} -> ${JSON.stringify(now)}`)
    process.exit(4)
  }
  consumer.seek({ topic: input, partition, offset: firstOffset })
}

await consumer.run({
  autoCommit: false,
  eachBatchAutoResolve: false,
  eachBatch: async ({ batch, isStale }) => {
    if (done >= expected || isStale()) return
    const partition = batch.partition
    const messages = batch.messages.slice(0, 3)
    if (!messages.length) return
    const next = String(Number(messages[messages.length - 1].offset) + 1)
    const offsets = { consumerGroupId: group, topics: [{ topic: input, partitions: [{ partition, offset: next }] }] }
    const txn = await producer.transaction()
    await txn.send({ topic: output, messages: messages.map(m => ({ key: m.key, value: m.value })) })
    if (transactions === 1 && !aborted) {
      const before = await committed()
      await txn.sendOffsets(offsets)
      await txn.abort()
      aborted = true
      console.log('ABORTED')
      await rewindTo(before, 'abort', partition, messages[0].offset)
      return
    }
    if (transactions === 3 && !fenced) {
      const before = await committed()
      const zombie = txn
      producer = await transactionalProducer()
      try {
        await zombie.sendOffsets(offsets)
        await zombie.commit()
        console.log('ZOMBIE COMMITTED')
        process.exit(3)
      } catch (error) {
        console.log(`FENCED ${error.type ?? error.name}`)
      }
      fenced = true
      await rewindTo(before, 'fence', partition, messages[0].offset)
      return
    }
    await txn.sendOffsets(offsets)
    await txn.commit()
    transactions += 1
    done += messages.length
    if (messages.length < batch.messages.length) consumer.seek({ topic: input, partition, offset: next })
    if (done >= expected) finish()
  }
})

const timer = setTimeout(() => { console.log(`TIMEOUT committed=${done}`); process.exit(2) }, 120000)
await finished
clearTimeout(timer)
console.log(`DONE transactions=${transactions} aborted=${aborted} fenced=${fenced}`)
await consumer.disconnect()
await producer.disconnect()
await admin.disconnect()
process.exit(0)
