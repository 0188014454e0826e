import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const LIB = join(ROOT, 'lib');
/** The composition root: the one place that builds the gateway's collaborators and hands each out (issue 45). */
const COMPOSITION_ROOT = ['lib/gateway/context.ts', 'lib/gateway/router.ts', 'lib/netauth.ts'];
/**
 * Functions outside the composition root that take the whole `GatewayContext`: none (issue 45 counted 62, each now
 * names the collaborators it uses). A ratchet: the list stays empty.
 */
const WHOLE_CONTEXT_LEFT: readonly string[] = [];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every function-like declaration of `text` with a parameter typed as the whole `GatewayContext`, by name. */
function takingWholeContext(text: string): string[] {
  const file = ts.createSourceFile('module.ts', text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    // An overload's signatures are one function: its implementation is counted.
    const overload = ts.isFunctionDeclaration(node) && node.body === undefined;
    if (ts.isFunctionLike(node) && !overload) {
      const whole = node.parameters.some((p) => p.type !== undefined && p.type.getText(file) === 'GatewayContext');
      if (whole) found.push(nameOf(node, file));
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

function nameOf(node: ts.SignatureDeclaration, file: ts.SourceFile): string {
  if (node.name !== undefined) return node.name.getText(file);
  const holder = node.parent;
  if (ts.isVariableDeclaration(holder) || ts.isPropertyAssignment(holder)) return holder.name.getText(file);
  return `(anonymous, line ${file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1})`;
}

describe('what the gateway hands its parts', () => {
  it(`${WHOLE_CONTEXT_LEFT.length} functions, no more, outside the composition root take the whole GatewayContext`, () => {
    const found = sources(LIB)
      .filter((file) => !COMPOSITION_ROOT.includes(relative(ROOT, file)))
      .flatMap((file) =>
        takingWholeContext(readFileSync(file, 'utf8')).map((name) => `${relative(ROOT, file)}: ${name}`),
      );
    expect(found).toEqual(WHOLE_CONTEXT_LEFT);
  });

  it("docs/architecture.md names the collaborators as the code does, exchange's first parameter included", () => {
    const text = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
    const named = [...text.matchAll(/`(\w+Collaborators)`/g)].map((m) => m[1]!);
    const exported = sources(LIB).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/export interface (\w+Collaborators)\b/g)].map((m) => m[1]!),
    );
    expect(named).toContain('GuardCollaborators');
    expect(named.filter((name) => !exported.includes(name))).toEqual([]);
    const grant = readFileSync(join(LIB, 'gateway/grants/grant.ts'), 'utf8');
    const first = /exchange\(\s*ctx: (\w+)/.exec(grant)?.[1];
    expect(first).toBe('GrantCollaborators');
    expect(text.split('\n\n').find((p) => p.startsWith('**A grant**'))).toContain(`\`ctx\`, is a \`${first}\``);
  });

  it('counts a function, a method, an arrow and a call signature, and not a narrowed parameter (the rule itself)', () => {
    const sample = [
      'function issue(ctx: GatewayContext, client: Client): A;',
      'function issue(ctx: GatewayContext, client: Client) {}',
      'const grant = { run(ctx: GatewayContext) {} };',
      'const handler = (ctx: GatewayContext) => () => {};',
      'interface Grant { exchange(ctx: GatewayContext): void }',
      'function narrow(ctx: Pick<GatewayContext, "store">, deps: TokenIssuing) {}',
    ].join('\n');
    expect(takingWholeContext(sample)).toEqual(['issue', 'run', 'handler', 'exchange']);
  });
});
