import type { EventEmitter } from 'node:events';

/** An event no one emits: its listener keeps the table from ever emptying (see below). */
const KEEP = Symbol('express-netauth.keep-listener-table');

function keep(): void {}

/** Runs as the emitter's own 'close' listener (`this` is the request or the response). */
function releaseListeners(this: EventEmitter): void {
  for (const name of this.eventNames()) if (name !== KEEP) this.removeAllListeners(name);
}

/**
 * Empties the request's and the response's listener tables once each has closed ('close' is a stream's last
 * event), so a finished request is garbage at the next scavenge. The router and the guard call it first.
 *
 * Why: Node's http server puts a listener on every response that holds the request, the response and the socket
 * (`resOnFinish`), and never takes it off. Under load V8 may decide, early in a process's life, to allocate every
 * emitter's listener table in the old generation (allocation-site pretenuring of `EventEmitter.init`'s
 * `{ __proto__: null }`). From then on each finished request stays reachable from its dead, old tables until the
 * next full collection, survives every scavenge and is promoted, which keeps the decision from ever reversing. In
 * the bench, processes caught so spent 26-28 % of their time in the collector against 14-17 % (bench/README.md,
 * "Listener tables released"). Listeners are removed one event at a time so each is deleted from its table in
 * place: Node replaces a table that becomes empty rather than clearing it, which would leave the old table's
 * references; hence the one listener kept, on an event no one emits.
 */
export function releaseListenersOnClose(req: EventEmitter, res: EventEmitter): void {
  req.on(KEEP, keep);
  req.on('close', releaseListeners);
  res.on(KEEP, keep);
  res.on('close', releaseListeners);
}
