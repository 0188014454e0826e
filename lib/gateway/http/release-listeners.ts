import type { EventEmitter } from 'node:events';

/** Node's own fields of an emitter: not public API, so every access is checked and a mismatch does nothing. */
interface ListenerTable {
  _events?: unknown;
  _eventsCount?: unknown;
}

/** Runs as the response's own 'close' listener (`this` is the response). */
function emptyListenerTable(this: EventEmitter): void {
  const emitter = this as EventEmitter & ListenerTable;
  const table = emitter._events as Record<PropertyKey, unknown> | null | undefined;
  const count = emitter._eventsCount;
  if (typeof table !== 'object' || table === null || typeof count !== 'number') return;
  // Emptied in place, each entry set to undefined as Node does in a stream's table (a delete reshapes the table,
  // at several times the cost). The table stays the response's, holding nothing.
  let emptied = 0;
  for (const name in table) {
    if (table[name] !== undefined) {
      table[name] = undefined;
      emptied++;
    }
  }
  // Listeners under symbols (rare: `events.errorMonitor`) are not enumerated above; Node's count tells.
  if (emptied < count) for (const name of Object.getOwnPropertySymbols(table)) table[name] = undefined;
  emitter._eventsCount = 0;
}

/**
 * Empties the response's listener table once it has closed ('close' is its last event: every listener, the
 * application's included, has run), so a finished request is garbage at the next scavenge. The router and the
 * guard call it first.
 *
 * Why: Node's http server puts a listener on every response that holds the request, the response and the socket
 * (`resOnFinish`), and never takes it off. Under load V8 may decide, early in a process's life, to allocate every
 * emitter's listener table in the old generation (allocation-site pretenuring of `EventEmitter.init`'s
 * `{ __proto__: null }`, which is where a response's table comes from). From then on each finished request stays
 * reachable from its dead, old table until the next full collection, survives every scavenge and is promoted,
 * which keeps the decision from ever reversing. In the bench, processes caught so spent 26-28 % of their time in
 * the collector against 14-17 % (bench/README.md, "Listener tables released").
 *
 * The table is emptied in place through Node's `_events`, the field every EventEmitter has had since Node 0.x:
 * the public way (`removeAllListeners` per event name, with one listener kept so Node does not swap in a fresh
 * table and leave the old one holding its references), on the request and the response, cost over a third of the
 * guard's own instructions; this costs next to nothing (valgrind, bench/README.md). A Node without that field is
 * left as it is. The request's table is not touched here: the router's form reader takes its own listeners off
 * once the body is read (form.ts), Node's only listener on it holds nothing, and a request is a stream, whose
 * table Node empties in place when a listener is removed. With the response released and the form reader's
 * listeners left on, the rate-limited flow fell back into the slow speed.
 */
export function releaseListenersOnClose(res: EventEmitter): void {
  res.on('close', emptyListenerTable);
}
