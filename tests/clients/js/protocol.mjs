// The line protocol of tests/clients/driven.py: commands on stdin, JSON events on stdout.
// Writes to a pipe are synchronous in Node on Linux, so an event is out before the code that
// follows it (a heartbeat, a JoinGroup) runs, which keeps the order the test sees causal.
import { createInterface } from 'node:readline'

export function emit (event) {
  process.stdout.write(JSON.stringify(event) + '\n')
}

export function partitionsOf (assignments, topic) {
  const found = new Set()
  for (const a of assignments ?? []) {
    if (a.topic === topic) {
      for (const p of a.partitions) found.add(Number(p))
    }
  }
  return found
}

export function sorted (set) {
  return [...set].sort((a, b) => a - b)
}

// A member's bookkeeping: what it owns (as the test should see it), what it has yet to commit.
export class Book {
  constructor (name) {
    this.name = name
    this.owned = new Set()
    this.pending = new Map() // partition -> next offset to commit
  }

  event (ev, extra = {}) {
    emit({ ev, member: this.name, ...extra })
  }

  // The owned set changes to ``now``: gone partitions are revoked first, new ones assigned after.
  become (now, kind = 'revoke') {
    const gone = sorted([...this.owned].filter(p => !now.has(p)))
    const added = sorted([...now].filter(p => !this.owned.has(p)))
    if (gone.length) {
      for (const p of gone) this.pending.delete(p)
      this.event(kind, { partitions: gone })
    }
    if (added.length) this.event('assign', { partitions: added })
    if (gone.length || added.length) this.event('assignment', { partitions: sorted(now) })
    this.owned = new Set(now)
  }

  records (list) {
    if (!list.length) return
    for (const [p, o] of list) this.pending.set(p, o + 1)
    this.event('records', { records: list })
  }
}

// Runs ``join(name)`` / ``leave(name)`` for each command; quits on "quit" or the end of input.
export function serve ({ join, leave, quit }) {
  emit({ ev: 'ready' })
  const lines = createInterface({ input: process.stdin })
  let chain = Promise.resolve()
  const run = (fn) => {
    chain = chain.then(fn).catch(error => {
      emit({ ev: 'error', member: '?', error: String(error?.stack ?? error) })
    })
  }
  lines.on('line', line => {
    const [command, name] = line.trim().split(' ')
    if (command === 'join') run(() => join(name))
    else if (command === 'leave') run(() => leave(name))
    else if (command === 'quit') lines.close()
  })
  lines.on('close', () => {
    chain.then(() => quit()).finally(() => process.exit(0))
  })
}
