/**
 * The gateway's events as one readable line each, printed by `npm run demo` while you click through the flows:
 *   12:04:05  ciba.requested        client=demo-app subscriber=sub-0001 purpose=FraudPreventionAndDetection scopes=sim-swap
 * The payloads carry no secret, token, code, auth_req_id or phone number (lib/ops/events.ts), so all of it prints.
 */
import { EVENT_NAMES, type NetAuthEventEmitter, type NetAuthEventName } from '../lib/index.js';

/** Field names shortened for reading; every other field keeps its name. */
const SHORT: Record<string, string> = {
  clientId: 'client',
  subscriberId: 'subscriber',
  grantType: 'grant',
  durationMs: 'ms',
};

function value(v: unknown): string {
  if (Array.isArray(v)) return v.map(value).join(',');
  if (typeof v === 'number') return String(Math.round(v * 10) / 10);
  const text = String(v);
  return /^[^\s"=]+$/.test(text) ? text : JSON.stringify(text);
}

export function formatEvent(name: NetAuthEventName, payload: object, at: Date): string {
  const time = at.toTimeString().slice(0, 8);
  const fields = Object.entries(payload)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${SHORT[k] ?? k}=${value(v)}`)
    .join(' ');
  return `${time}  ${name.padEnd(28)}  ${fields}`.trimEnd();
}

/** Writes every event of the gateway, as it happens. */
export function logEvents(
  events: NetAuthEventEmitter,
  write: (line: string) => void,
  now: () => Date = () => new Date(),
): void {
  for (const name of EVENT_NAMES) events.on(name, (payload: object) => write(formatEvent(name, payload, now())));
}
