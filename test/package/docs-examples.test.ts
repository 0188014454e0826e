/**
 * Every TypeScript block of README.md and docs/*.md compiles under `strict`, against the package's sources
 * (`express-netauth` and `express-netauth/client` resolve to lib/), with the names the docs leave to the
 * reader declared in doc-placeholders.d.ts. One program for all blocks; only the blocks are checked.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { allExamples, moduleText, sourceLine, type DocExample } from './docs-examples.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const PLACEHOLDERS = join(ROOT, 'test/package/doc-placeholders.d.ts');

/** Snippets that must NOT compile: proof that the check can fail (the README's untyped error handler was one). */
const MUST_FAIL: DocExample[] = [
  {
    doc: 'must-fail:error-handler',
    line: 1,
    prelude: '',
    example: undefined,
    code: "import express from 'express';\nconst app = express();\napp.use((err, req, res, next) => next(err));",
  },
  {
    doc: 'must-fail:unknown-option',
    line: 1,
    prelude: '',
    example: undefined,
    code: "createNetAuth({ ...options, issuerr: 'x' });\nimport { createNetAuth } from 'express-netauth';",
  },
  {
    // docs/architecture.md once described methods by `claim` and `verify`, long gone: a contributor's example
    // compiles against the sources as they are.
    doc: 'must-fail:stale-plug-in',
    line: 1,
    prelude: '',
    example: undefined,
    inside: 'lib/gateway/client-auth',
    code: "import type { ClientAuthMethodModule } from './method.js';\ndeclare const m: ClientAuthMethodModule;\nm.claim();",
  },
];

function compile(examples: DocExample[]): Map<DocExample, string[]> {
  const options: ts.CompilerOptions = {
    strict: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2023.d.ts'],
    types: ['node'],
    esModuleInterop: true,
    skipLibCheck: true,
    noEmit: true,
    paths: {
      'express-netauth': [join(ROOT, 'lib/index.ts')],
      'express-netauth/client': [join(ROOT, 'lib/client/index.ts')],
    },
  };
  // Virtual files beside package.json ("type": "module"): ES modules, so top-level await is allowed.
  // A contributor's example (`<!-- inside: lib/… -->`) is a module of that folder: its relative imports resolve there.
  const files = new Map(examples.map((e, i) => [join(ROOT, e.inside ?? '', `docs-example-${i}.ts`), e]));
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, onError, create) => {
    const example = files.get(name);
    return example
      ? ts.createSourceFile(name, moduleText(example), version)
      : getSourceFile(name, version, onError, create);
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => files.has(name) || fileExists(name);
  const program = ts.createProgram({ rootNames: [PLACEHOLDERS, ...files.keys()], options, host });

  const out = new Map<DocExample, string[]>();
  const placeholderProblems = ts.getPreEmitDiagnostics(program, program.getSourceFile(PLACEHOLDERS));
  if (placeholderProblems.length > 0) throw new Error(ts.formatDiagnostics(placeholderProblems, host));
  for (const [name, example] of files) {
    const sourceFile = program.getSourceFile(name)!;
    const problems = [...program.getSyntacticDiagnostics(sourceFile), ...program.getSemanticDiagnostics(sourceFile)];
    out.set(
      example,
      problems.map((d) => {
        const where =
          d.start === undefined
            ? example.doc
            : sourceLine(example, sourceFile.getLineAndCharacterOfPosition(d.start).line);
        return `${where}: TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
      }),
    );
  }
  return out;
}

describe('the TypeScript examples of README.md and docs/*.md', () => {
  const examples = allExamples(ROOT);
  const results = compile([...examples, ...MUST_FAIL]);

  it('are found: the quick start programs of the README, and the examples of the guides', () => {
    // The README keeps only the quick start; the guides hold the rest (27 blocks when the README was cut down).
    expect(examples.filter((e) => e.doc === 'README.md').length).toBeGreaterThanOrEqual(2);
    expect(examples.filter((e) => e.doc !== 'README.md').length).toBeGreaterThanOrEqual(27);
    expect(examples.filter((e) => e.example !== undefined).map((e) => e.example)).toEqual([
      'gateway.ts',
      'app.ts',
      'camara-gateway.ts',
    ]);
  });

  it('compile under strict, with the placeholders declared', () => {
    const problems = examples.flatMap((e) => results.get(e)!);
    expect(problems).toEqual([]);
  });

  it('the check fails on what strict refuses: an untyped error handler, an unknown option, a stale plug-in', () => {
    const [handler, option, stale] = MUST_FAIL.map((e) => results.get(e)!.join('\n'));
    expect(handler).toMatch(/TS7006 Parameter 'err' implicitly has an 'any' type/);
    expect(option).toMatch(/TS(2353|2561) .*'issuerr' does not exist/);
    expect(stale).toMatch(/TS2339 Property 'claim' does not exist on type 'ClientAuthMethodModule'/);
    // docs/architecture.md's plug-in points: a grant and a client-authentication method, as modules of lib/.
    const inside = examples.filter((e) => e.inside !== undefined).map((e) => `${e.doc} ${e.inside}`);
    expect(inside).toEqual(['docs/architecture.md lib/gateway/grants', 'docs/architecture.md lib/gateway/client-auth']);
  });
});
