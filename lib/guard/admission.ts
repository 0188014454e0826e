/**
 * The guard's admission pipeline: one ordered list of checks, each declaring whether it may need I/O, run by one
 * loop. The loop stays in the caller's turn until a check has to wait; it then hands back where it stopped, and
 * the async runner awaits that check and goes on with the same loop. There is one list, so a check added to it is
 * run on every path: no second list of "what needs I/O" to keep equal by hand.
 */

/** A check that answers in the turn it is called. `R`: its refusal (undefined: the request may go on). */
export interface SameTurnCheck<S, R> {
  readonly name: string;
  readonly io: false;
  run(state: S): R | undefined;
}

/**
 * A check that may need I/O. `skips` says, in the same turn, that on this state `run` would pass without any:
 * the loop then goes on without waiting. The equivalence property test holds every `skips` to that promise
 * (the async execution never skips, and must answer the same).
 */
export interface IoCheck<S, R> {
  readonly name: string;
  readonly io: true;
  skips(state: S): boolean;
  run(state: S): Promise<R | undefined>;
}

export type Check<S, R> = SameTurnCheck<S, R> | IoCheck<S, R>;

/** Where the same-turn loop stopped: the check it waits for (at `index`), and that check's pending answer. */
export class Waiting<R> {
  constructor(
    readonly index: number,
    readonly answer: Promise<R | undefined>,
  ) {}
}

/**
 * The checks from `from` on, in this turn: a refusal, undefined when every check passed, or `Waiting` at the first
 * check that needs I/O. Allocates nothing unless it has to wait.
 */
export function admitInTurn<S, R>(checks: readonly Check<S, R>[], state: S, from = 0): R | undefined | Waiting<R> {
  for (let i = from; i < checks.length; i++) {
    const check = checks[i]!;
    if (!check.io) {
      const refusal = check.run(state);
      if (refusal !== undefined) return refusal;
    } else if (!check.skips(state)) {
      return new Waiting(i, check.run(state));
    }
  }
  return undefined;
}

/** The rest of an admission the same-turn loop could not finish: each wait awaited, then the loop again. */
export async function admitAfter<S, R>(
  checks: readonly Check<S, R>[],
  state: S,
  waiting: Waiting<R>,
): Promise<R | undefined> {
  let current = waiting;
  for (;;) {
    const refusal = await current.answer;
    if (refusal !== undefined) return refusal;
    const next = admitInTurn(checks, state, current.index + 1);
    if (!(next instanceof Waiting)) return next;
    current = next;
  }
}

/**
 * The reference execution: every check awaited in order in a later turn, the I/O ones run even where they say
 * they could be skipped. Slower and never in the caller's turn; the property test compares the guard's answers
 * under it with the same-turn loop's.
 */
export async function admitEachAwaited<S, R>(checks: readonly Check<S, R>[], state: S): Promise<R | undefined> {
  for (const check of checks) {
    const refusal = check.io ? await check.run(state) : await Promise.resolve(state).then((s) => check.run(s));
    if (refusal !== undefined) return refusal;
  }
  return undefined;
}
