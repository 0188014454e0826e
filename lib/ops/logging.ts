import { EVENT_NAMES, type EventHub, type NetAuthEventName } from './events.js';

type Level = 'debug' | 'info' | 'warn' | 'error';

/** One log method, as pino's: `logger.info({ ...fields }, 'message')`. */
export type LogMethod = (fields: object, message: string) => void;

/**
 * The logger the package writes to: a pino logger (v9 or v10) fits. Described by the members the package
 * uses, so the public types compile without pino, an optional peer dependency the package never loads itself.
 */
export interface NetAuthLogger {
  child(bindings: Record<string, unknown>, options: { redact: { paths: string[]; censor: string } }): NetAuthLogger;
  isLevelEnabled(level: string): boolean;
  debug: LogMethod;
  info: LogMethod;
  warn: LogMethod;
  error: LogMethod;
}

/**
 * Field names that would carry a credential, a token, a code, an auth_req_id or a phone number, at the top
 * level and one level down. The events never carry them; redaction is the second line of defence, should
 * anything ever put one into a log record (a future payload, an error object).
 */
const SENSITIVE = [
  'access_token',
  'id_token',
  'refresh_token',
  'token',
  'code',
  'code_verifier',
  'auth_req_id',
  'authReqId',
  'client_secret',
  'clientSecret',
  'secret',
  'password',
  'authorization',
  'cookie',
  'csrf',
  'login_hint',
  'loginHint',
  'phoneNumber',
  'phone_number',
  'msisdn',
];

export const REDACT_PATHS: readonly string[] = [...SENSITIVE, ...SENSITIVE.map((name) => `*.${name}`)];

/** Log level of each event: problems an operator should look at are warnings; per-request timing is debug. */
const LEVELS: Partial<Record<NetAuthEventName, Level>> = {
  'code.replayed': 'warn',
  'subscriber.revoked': 'warn',
  'client.revoked': 'warn',
  'client.authentication_failed': 'warn',
  'client.registration_refused': 'error',
  'rate.limited': 'warn',
  'rate.fallback': 'warn',
  'redemption.unsettled': 'warn',
  'request.completed': 'debug',
};

/** The package's child of the application's logger: bound to the package, with redaction. */
function childOf(logger: NetAuthLogger): NetAuthLogger {
  return logger.child({ lib: 'express-netauth' }, { redact: { paths: [...REDACT_PATHS], censor: '[redacted]' } });
}

const children = new WeakMap<NetAuthLogger, NetAuthLogger>();

function child(logger: NetAuthLogger): NetAuthLogger {
  let found = children.get(logger);
  if (!found) {
    found = childOf(logger);
    children.set(logger, found);
  }
  return found;
}

/** Logs every event as `{ event, ...payload }` with the event name as the message. */
export function attachLogger(logger: NetAuthLogger, events: EventHub): void {
  const log = child(logger);
  for (const name of EVENT_NAMES) {
    const level = LEVELS[name] ?? 'info';
    // Skips listening (and so timing requests) when the level is off.
    if (!log.isLevelEnabled(level)) continue;
    events.on(name, (payload) => {
      log[level]({ event: name, ...payload }, name);
    });
  }
}

/** An internal error: its type and message only, as the default stderr report (never request data). */
export function logInternalError(logger: NetAuthLogger, error: unknown): void {
  // Not under `err`: pino's err serializer would add the stack (and rename the type) of an Error.
  const details = error instanceof Error ? { type: error.name, message: error.message } : { type: typeof error };
  child(logger).error({ error: details }, 'internal error');
}

/** A configuration that works, but not as a production deployment needs: said once, at start-up. */
export interface StartupWarning {
  /** The option it concerns, e.g. `pairwiseSalt`. */
  option: string;
  message: string;
  /** Stable identifier (`NETAUTH_…`) of a warning found at run time; the message may change. */
  code?: string;
  /** `error`: the deployment does not work as configured (every request fails). Default `warn`. */
  level?: 'warn' | 'error';
  /** A run-time report its caller already limits (once per outage): printed each time, not once per process. */
  repeats?: boolean;
}

/** Warnings already printed to stderr: each once per process, however many gateways it creates (tests, workers). */
const printed = new Set<string>();

/**
 * The one place start-up warnings go: the logger when one is given (every time: each gateway has its logger),
 * else one line on stderr, once per process.
 */
export function reportWarning(logger: NetAuthLogger | undefined, warning: StartupWarning): void {
  const { option, code, level = 'warn' } = warning;
  if (logger) {
    // Not `code`: that field is redacted (an authorization code).
    child(logger)[level](code === undefined ? { option } : { option, warning: code }, warning.message);
    return;
  }
  if (!warning.repeats) {
    if (printed.has(warning.message)) return;
    printed.add(warning.message);
  }
  const label = `${level === 'error' ? 'ERROR' : 'WARNING'}${code === undefined ? '' : ` ${code}`}`;
  process.stderr.write(`express-netauth: ${label}: ${warning.message}\n`);
}
