/**
 * Issue 19 defect 3: no error the client throws may carry a token, code, secret or assertion anywhere in its
 * cause chain. Every fetch of the test process (the client's calls to the gateway, the test browser's
 * redirects) is watched for such values; every error the client threw is recorded; `secretsInErrors()`
 * prints each error with util.inspect(err, { depth: null }) and lists the values found in the output.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { inspect } from 'node:util';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const errors: unknown[] = [];
const secrets = new Set<string>();

/** Body fields and JSON members that hold tokens, codes, secrets or assertions. */
const SECRET_FIELDS = [
  'access_token',
  'refresh_token',
  'id_token',
  'code',
  'code_verifier',
  'client_secret',
  'client_assertion',
  'request',
  'token',
  'auth_req_id',
  'login_hint',
];

function remember(value: unknown): void {
  // Short values (`true`, a 2-letter code) would match by chance; every secret here is long.
  if (typeof value === 'string' && value.length >= 16) secrets.add(value);
}

function rememberForm(body: URLSearchParams): void {
  for (const field of SECRET_FIELDS) for (const value of body.getAll(field)) remember(value);
}

function rememberAuthorization(header: string | null): void {
  if (!header) return;
  const [scheme, value] = header.split(' ');
  if (scheme?.toLowerCase() === 'bearer' || scheme?.toLowerCase() === 'dpop') remember(value);
  if (scheme?.toLowerCase() === 'basic' && value) {
    const [, password] = Buffer.from(value, 'base64').toString().split(':');
    if (password) remember(decodeURIComponent(password.replace(/\+/g, ' ')));
  }
}

/** Adds values the test knows to be secret (client secrets, private key material). */
export function rememberSecrets(...values: Array<string | undefined>): void {
  for (const value of values) remember(value);
}

let installed = false;

/**
 * Wraps the global fetch (once per worker: files share it) and starts this file's record afresh, as files
 * share their worker's modules.
 */
export function watchSecrets(): void {
  errors.length = 0;
  secrets.clear();
  if (installed) return;
  installed = true;
  const original = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    rememberAuthorization(headers.get('authorization'));
    // A DPoP proof is an assertion too.
    remember(headers.get('dpop'));
    const url = new URL(input instanceof Request ? input.url : input.toString());
    rememberForm(url.searchParams);
    if (typeof init?.body === 'string') rememberForm(new URLSearchParams(init.body));
    if (init?.body instanceof URLSearchParams) rememberForm(init.body);
    const res = await original(input, init);
    const location = res.headers.get('location');
    if (location) rememberForm(new URL(location, url).searchParams);
    if (/json/.test(res.headers.get('content-type') ?? '')) {
      const body = (await res
        .clone()
        .json()
        .catch(() => undefined)) as Record<string, unknown> | undefined;
      for (const field of SECRET_FIELDS) remember(body?.[field]);
      // The test app answers with the session's token under `token`.
      const nested = body?.token;
      if (nested && typeof nested === 'object')
        for (const field of SECRET_FIELDS) remember((nested as Record<string, unknown>)[field]);
    }
    return res;
  };
}

export function recordError(error: unknown): void {
  errors.push(error);
}

export function recordedErrors(): readonly unknown[] {
  return errors;
}

const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));

/**
 * Inspects every recorded error as a log would print it, writes the whole log to
 * test-artifacts/client-errors-<name>.log, and returns the secrets found in it (none, or the test fails).
 */
export function secretsInErrors(name: string): { errors: number; secrets: number; found: string[] } {
  const log = errors.map((error) => inspect(error, { depth: null })).join('\n\n');
  mkdirSync(ARTIFACTS, { recursive: true });
  writeFileSync(`${ARTIFACTS}client-errors-${name}.log`, log);
  const found = [...secrets]
    .filter((secret) => log.includes(secret))
    .map((secret) => `${secret.slice(0, 6)}…(${secret.length} chars)`);
  return { errors: errors.length, secrets: secrets.size, found };
}

/**
 * The last test of a client test file: every error recorded in the file, printed as a log would print it,
 * holds none of the secrets seen on the wire. `atLeast` guards against a check that looked at nothing.
 */
export function describeNoSecretsInErrors(name: string, atLeast: { errors: number; secrets: number }): void {
  describe('no error the client threw in this file carries a token, code, secret or assertion', () => {
    it('every recorded error, printed with util.inspect(err, { depth: null }), holds none of the values seen on the wire', () => {
      const { errors, secrets, found } = secretsInErrors(name);
      expect(errors).toBeGreaterThanOrEqual(atLeast.errors);
      expect(secrets).toBeGreaterThanOrEqual(atLeast.secrets);
      expect(found).toEqual([]);
    });
  });
}
