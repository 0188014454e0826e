import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Issue 45: the guard reads a body one way, the router's (lib/gateway/http/read-body.ts), and parses JSON in one
 * place (lib/guard/json-body.ts). It parsed JSON by hand in body-hash.ts and through express.json() in device.ts.
 */
const GUARD = join(import.meta.dirname, '../../lib/guard');

describe("the guard's body reading", () => {
  const sources = readdirSync(GUARD)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => ({ file: f, text: readFileSync(join(GUARD, f), 'utf8') }));

  it('no body parser of its own: express is imported for its types only', () => {
    const valueImports = sources.filter(({ text }) => /^import (?!type )[^;]*from 'express';/m.test(text));
    expect(valueImports.map((s) => s.file)).toEqual([]);
  });

  it('JSON is parsed in json-body.ts only, which reads through the router reader', () => {
    const parsing = sources.filter(({ text }) => text.includes('JSON.parse(')).map((s) => s.file);
    expect(parsing).toEqual(['json-body.ts']);
    const reader = sources.find((s) => s.file === 'json-body.ts')!.text;
    expect(reader).toMatch(/from '\.\.\/gateway\/http\/read-body\.js'/);
  });
});
