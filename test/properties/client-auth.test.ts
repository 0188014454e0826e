import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import * as client from 'openid-client';
import type { Request, Response } from 'express';
import { clientSecretBasic } from '../../lib/gateway/client-auth/client-secret-basic.js';
import type { Check } from '../../lib/gateway/client-auth/method.js';
import { FormParams, formDecode } from '../../lib/gateway/http/form.js';
import { StaticClientRegistry, type RegisteredClient } from '../../lib/index.js';
import { CLIENTS, basic } from '../helpers/gateway.js';
import {
  TOKEN_ERRORS,
  expectJsonEndpointAnswer,
  headerValue,
  report,
  startGateway,
  wellFormed,
  type PropertyGateway,
} from './support.js';

/**
 * Client authentication (docs/protocol.md, RFC 6749 §2.3.1 and Appendix B): whatever the client id and secret,
 * the header openid-client's ClientSecretBasic builds decodes to exactly them, here and at the endpoints;
 * a raw `id:secret` splits on the first colon; garbage never throws and never authenticates.
 */

const RUNS = 300;

const basicMethod = clientSecretBasic(new StaticClientRegistry([]));

interface BasicRead {
  clientId: string;
  holds: boolean;
}

/**
 * What the gateway's client_secret_basic method (passport-http's BasicStrategy and its verify callback) reads
 * from a header: the client id it claims, and whether its secret is `secret` (the method's own secret check,
 * run against a registration of that secret); undefined when it claims no client.
 */
async function readBasic(header: string, secret = 'not-the-secret'): Promise<BasicRead | undefined> {
  let claimed: string | undefined;
  const request = { headers: { authorization: header } } as Request;
  const attempt = async (clientId: string, check: Check) => {
    claimed = clientId;
    return check({ clientId, clientSecret: secret, grantTypes: [], scopes: [] });
  };
  const outcome = await basicMethod.authenticate(request, {} as Response, new FormParams({}), attempt);
  if (claimed === undefined) {
    expect(outcome).toEqual({ failure: 'malformed' });
    return undefined;
  }
  return { clientId: claimed, holds: 'client' in outcome && outcome.client !== undefined };
}

/** The Authorization header exactly as openid-client (oauth4webapi) builds it. */
function openidClientHeader(clientId: string, secret: string): string {
  const headers = new Headers();
  client.ClientSecretBasic(secret)(
    { issuer: 'https://as.example' } as client.ServerMetadata,
    { client_id: clientId } as client.ClientMetadata,
    new URLSearchParams(),
    headers,
  );
  return headers.get('authorization')!;
}

/** No lone surrogates: encodeURIComponent (and so openid-client) refuses them. */
function encodable(text: string): boolean {
  try {
    encodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

const id = wellFormed(40).filter((s) => s !== '');
const secret = fc
  .oneof(wellFormed(60), fc.string({ unit: 'binary', maxLength: 60 }).filter(encodable))
  .filter((s) => s !== '');

describe('Basic credentials properties', () => {
  const roundTrip =
    'RFC 6749 Appendix B round trip: any id and secret, encoded as openid-client does, ' + 'decode to themselves';
  it(roundTrip, async () => {
    await fc.assert(
      fc.asyncProperty(id, secret, async (clientId, s) => {
        expect(await readBasic(openidClientHeader(clientId, s), s)).toEqual({ clientId, holds: true });
        // The test fixture's encoder agrees with openid-client's.
        expect(basic(clientId, s)).toBe(openidClientHeader(clientId, s));
      }),
      { numRuns: RUNS },
    );
  });

  it('formDecode inverts form-encoding (`+` is a space, then percent-decoding) and never throws', () => {
    fc.assert(
      fc.property(secret, (value) => {
        const encoded = new URLSearchParams({ v: value }).toString().slice(2);
        expect(formDecode(encoded)).toBe(value);
      }),
      { numRuns: RUNS },
    );
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (value) => {
        const decoded = formDecode(value);
        if (decoded === undefined) expect(() => decodeURIComponent(value.replace(/\+/g, ' '))).toThrow();
      }),
      { numRuns: RUNS },
    );
  });

  it('unencoded credentials split on the FIRST colon: the secret keeps the rest, colons included', async () => {
    const plainId = fc.stringMatching(/^[A-Za-z0-9._~-]{1,20}$/);
    // passport-http refuses credentials with nothing between their first two colons, so a raw secret may not
    // start with one (form-encoded, as RFC 6749 §2.3.1 has it, it is `%3A` and passes).
    const plainSecret = fc.stringMatching(/^[A-Za-z0-9._~!*'()-][A-Za-z0-9._~:!*'()-]{0,39}$/);
    await fc.assert(
      fc.asyncProperty(plainId, plainSecret, async (clientId, s) => {
        const header = `Basic ${Buffer.from(`${clientId}:${s}`).toString('base64')}`;
        expect(await readBasic(header, s)).toEqual({ clientId, holds: true });
      }),
      { numRuns: RUNS },
    );
    expect(await readBasic(`Basic ${Buffer.from('id::secret').toString('base64')}`, ':secret')).toBeUndefined();
    const encoded = `Basic ${Buffer.from('id:%3Asecret').toString('base64')}`;
    expect(await readBasic(encoded, ':secret')).toEqual({ clientId: 'id', holds: true });
  });

  it('malformed credentials are refused, not thrown: no colon, empty halves, bad escapes, other schemes', async () => {
    const b64 = (text: string) => Buffer.from(text).toString('base64');
    const malformed = fc.oneof(
      id.map((v) => `Basic ${b64(encodeURIComponent(v))}`), // no colon at all
      id.map((v) => `Basic ${b64(`:${encodeURIComponent(v)}`)}`), // empty id
      id.map((v) => `Basic ${b64(`${encodeURIComponent(v)}:`)}`), // empty secret
      fc
        .tuple(id, fc.constantFrom('%', '%zz', '%E2%82', '%C3%28', 'a%'))
        .map(([v, bad]) => `Basic ${b64(`${encodeURIComponent(v)}:${bad}`)}`),
      // passport-http reads any scheme name containing `Basic` as Basic: `Basicx` is such credentials.
      fc
        .tuple(fc.constantFrom('Bearer', 'Digest', 'Negotiate', ''), id)
        .map(([scheme, v]) => `${scheme} ${b64(`a:${encodeURIComponent(v)}`)}`),
    );
    await fc.assert(
      fc.asyncProperty(malformed, async (header) => {
        expect(await readBasic(header)).toBeUndefined();
      }),
      { numRuns: RUNS },
    );
    await fc.assert(
      fc.asyncProperty(headerValue, async (header) => {
        const read = await readBasic(header);
        if (read) {
          expect(read.clientId).not.toBe('');
          expect(read.holds).toBe(false);
        }
      }),
      { numRuns: RUNS },
    );
  });
});

describe('Basic credentials at the endpoints', () => {
  /** Generated registrations, looked up beside the fixture's clients. */
  const generated = new Map<string, RegisteredClient>();
  let gw: PropertyGateway;

  beforeAll(async () => {
    const fixture = new Map(CLIENTS.map((c) => [c.clientId, c]));
    gw = await startGateway({
      clients: { find: async (clientId) => fixture.get(clientId) ?? generated.get(clientId) },
    });
  });
  afterAll(async () => {
    report('client-auth', [gw]);
    expect(gw.internalErrors).toEqual([]);
    await gw.close();
  });

  it('a generated client authenticates with openid-client encoding at /token and /bc-authorize; a changed secret or id is 401 invalid_client', async () => {
    await fc.assert(
      fc.asyncProperty(
        id,
        secret,
        fc.string({ minLength: 1, maxLength: 3 }),
        fc.constantFrom('/apigateway/token', '/apigateway/bc-authorize'),
        async (clientId, s, tweak, path) => {
          generated.clear();
          // A registration that passes the checks every registry's records pass (one scope at least).
          const scopes = ['dpv:FraudPreventionAndDetection#sim-swap'];
          generated.set(clientId, {
            clientId,
            clientSecret: s,
            grantTypes: ['urn:openid:params:grant-type:ciba'],
            scopes,
          });
          const post = (authorization: string) =>
            gw.send({
              method: 'POST',
              path,
              headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' },
              body: '',
            });
          const codes = path.endsWith('token') ? TOKEN_ERRORS : [...TOKEN_ERRORS, 'invalid_scope', 'unknown_user_id'];

          // Authenticated: the answer is about the (empty) request, not the client.
          const good = await post(openidClientHeader(clientId, s));
          expectJsonEndpointAnswer(good, codes, () => undefined);
          expect(good.status, good.text).toBe(400);
          expect(JSON.parse(good.text).error).toBe('invalid_request');

          for (const [wrongId, wrongSecret] of [
            [clientId, s + tweak],
            [clientId, tweak + s],
            [clientId + tweak, s],
          ] as const) {
            const bad = await post(openidClientHeader(wrongId, wrongSecret));
            expectJsonEndpointAnswer(bad, codes, () => undefined);
            expect(bad.status).toBe(401);
          }
          // Raw (not form-encoded) credentials authenticate only when encoding changes nothing.
          const rawHeader = `Basic ${Buffer.from(`${clientId}:${s}`).toString('base64')}`;
          const raw = await post(rawHeader);
          const read = await readBasic(rawHeader, s);
          expect(raw.status).toBe(read?.clientId === clientId && read.holds ? 400 : 401);
        },
      ),
      { numRuns: 120 },
    );
  });
});
