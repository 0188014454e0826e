import type { LoginHint } from '../../identity/login-hint.js';

/**
 * Sandbox mode (`options.sandbox`) serves the allow-listed lines only, each named by a `tel:` hint: why `hint`
 * is refused, or undefined when its line may be served (every line outside sandbox mode).
 */
/** Sandbox mode's allow-listed lines; undefined outside it. */
export interface Sandbox {
  sandboxLines: ReadonlySet<string> | undefined;
}

export function sandboxRefusal(ctx: Sandbox, hint: LoginHint | undefined): string | undefined {
  const lines = ctx.sandboxLines;
  if (lines === undefined) return undefined;
  if (hint?.type !== 'tel') return 'in sandbox mode the subscriber must be named by an allow-listed line (tel:+...)';
  return lines.has(hint.phoneNumber) ? undefined : 'the line is not on the sandbox allow-list';
}
