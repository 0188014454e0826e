/**
 * An answer that may come at once or later: a promise only when I/O was needed (Redis), the value itself when
 * the answer lives in this process (the memory store and counters). Hot paths take the value without a
 * microtask turn; everything else awaits it as usual (awaiting a value is allowed).
 */
export type Answer<T> = T | Promise<T>;

/** `next` applied to an answer: at once when the answer came at once, else when its promise settles. */
export function whenAnswered<T, R>(answer: Answer<T>, next: (value: T) => Answer<R>): Answer<R> {
  return answer instanceof Promise ? answer.then(next) : next(answer);
}
