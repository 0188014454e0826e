import type { LoginHint } from '../../identity/login-hint.js';
import type { GatewayContext } from '../context.js';

/**
 * Sandbox mode (`options.sandbox`) serves the allow-listed lines only, each named by a `tel:` hint: why `hint`
 * is refused, or undefined when its line may be served (every line outside sandbox mode).
 */
export function sandboxRefusal(ctx: GatewayContext, hint: LoginHint | undefined): string | undefined {
  const lines = ctx.sandboxLines;
  if (lines === undefined) return undefined;
  if (hint?.type !== 'tel') return 'in sandbox mode the subscriber must be named by an allow-listed line (tel:+...)';
  return lines.has(hint.phoneNumber) ? undefined : 'the line is not on the sandbox allow-list';
}
