import { setImmediate as tick } from 'node:timers/promises';
import { EVENT_NAMES, type NetAuth, type NetAuthEventName, type NetAuthEvents } from '../../lib/index.js';

export interface RecordedEvent<K extends NetAuthEventName = NetAuthEventName> {
  name: K;
  payload: NetAuthEvents[K];
}

/** Subscribes to every event and keeps them in order. */
export function recordEvents(netauth: NetAuth): {
  all: RecordedEvent[];
  /** The payloads of one event, in order. */
  of<K extends NetAuthEventName>(name: K): NetAuthEvents[K][];
  /** Event names in order, without request.completed. */
  names(): NetAuthEventName[];
  clear(): void;
  /** request.completed fires on the response's 'close', which may come after the client has the response. */
  settle(): Promise<void>;
} {
  const all: RecordedEvent[] = [];
  for (const name of EVENT_NAMES)
    netauth.events.on(name, (payload, n) => void all.push({ name: n, payload } as RecordedEvent));
  return {
    all,
    of: <K extends NetAuthEventName>(name: K) =>
      all.filter((e) => e.name === name).map((e) => e.payload as NetAuthEvents[K]),
    names: () => all.filter((e) => e.name !== 'request.completed').map((e) => e.name),
    clear: () => void all.splice(0),
    settle: async () => {
      await tick();
      await tick();
    },
  };
}
