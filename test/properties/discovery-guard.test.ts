import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { APP1, SIM_SWAP } from '../helpers/gateway.js';
import {
  DESCRIPTION_CHARSET,
  METHODS,
  expectJsonError,
  expectSafe,
  formOf,
  headerValue,
  randomHeaders,
  report,
  startGateway,
  type PropertyGateway,
} from './support.js';

/**
 * Discovery and the service-API guard under generated requests.
 * - Discovery answers the same document to any GET/HEAD (whatever the query and headers), 405 otherwise.
 * - The guard (RFC 6750 §3, RFC 9449 §7) answers from the Authorization header alone, as the model says: no
 *   Bearer or DPoP credentials → 401 with bare `Bearer realm` and `DPoP realm` challenges; a malformed header →
 *   400 invalid_request; a well-formed unknown token → 401 invalid_token; the right (unbound) token → the API,
 *   or 403 insufficient_scope where its scope does not cover the route, and 401 invalid_token under the DPoP
 *   scheme (it is bound to no key). The error is in the challenge of the scheme used.
 */

const REALM = 'http://gateway.test/apigateway';
const B64TOKEN = /^(?:Bearer|DPoP) +([A-Za-z0-9\-._~+/]+=*) *$/i;
const ALGS = 'algs="RS256 PS256 ES256 ES384 EdDSA"';

describe('discovery and the guard under generated requests', () => {
  let gw: PropertyGateway;
  let accessToken: string;
  let document: string;

  beforeAll(async () => {
    gw = await startGateway();
    const form = { authorization: APP1, 'content-type': 'application/x-www-form-urlencoded' };
    const started = await gw.send({
      method: 'POST',
      path: '/apigateway/bc-authorize',
      headers: form,
      body: formOf([
        ['login_hint', 'tel:+34600000001'],
        ['scope', SIM_SWAP],
      ]),
    });
    const token = await gw.send({
      method: 'POST',
      path: '/apigateway/token',
      headers: form,
      body: formOf([
        ['grant_type', 'urn:openid:params:grant-type:ciba'],
        ['auth_req_id', JSON.parse(started.text).auth_req_id],
      ]),
    });
    accessToken = JSON.parse(token.text).access_token;
    document = (await gw.send({ method: 'GET', path: '/apigateway/.well-known/openid-configuration' })).text;
  });
  afterAll(async () => {
    report('discovery-guard', [gw]);
    expect(gw.internalErrors).toEqual([]);
    await gw.close();
  });

  it('discovery: the same document for any GET or HEAD, 405 with Allow for other methods', async () => {
    const path = fc.constantFrom(
      '/apigateway/.well-known/openid-configuration',
      '/apigateway/.well-known/oauth-authorization-server',
    );
    const query = fc.oneof(
      fc.constant(''),
      fc
        .array(fc.tuple(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 })), { maxLength: 3 })
        .map((p) => `?${formOf(p)}`),
      fc.constantFrom('?%zz', '?a=1&a=2', '?issuer=https://evil.example'),
    );
    const method = fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom('GET', 'HEAD') },
      { weight: 1, arbitrary: fc.constantFrom(...METHODS) },
    );
    await fc.assert(
      fc.asyncProperty(path, query, method, randomHeaders, headerValue, async (p, q, m, headers, authorization) => {
        const answer = await gw.send({ method: m, path: p + q, headers: { ...headers, authorization } });
        expectSafe(answer);
        if (m === 'GET' || m === 'HEAD') {
          expect(answer.status).toBe(200);
          expect(answer.headers['content-type']).toMatch(/^application\/json/);
          expect(answer.text).toBe(m === 'GET' ? document : '');
          expect(answer.headers['cache-control']).toBe('public, max-age=300');
        } else {
          expect(answer.status).toBe(405);
          expect(answer.headers.allow).toBe('GET, HEAD');
          if (m !== 'HEAD') expectJsonError(answer, ['invalid_request']);
        }
      }),
      { numRuns: 250 },
    );
    expect(JSON.parse(document).issuer).toBe(REALM);
  });

  it('the guard answers exactly as RFC 6750 and the model say, whatever the Authorization header', async () => {
    const header = fc.oneof(
      { weight: 3, arbitrary: headerValue },
      { weight: 1, arbitrary: fc.constant(undefined) },
      // Around the real token: spacing and case of the scheme, changed or extended tokens.
      {
        weight: 3,
        arbitrary: fc
          .tuple(
            fc.constantFrom('Bearer', 'bearer', 'BEARER', 'Bearer:', 'Bearerx', 'Basic', 'DPoP', 'dpop', 'DPoPx'),
            fc.constantFrom(' ', '  ', '\t', ''),
            fc.constantFrom('same', 'x+', 'cut', 'upper', '=', 'space', '.'),
            fc.constantFrom('', ' ', '=='),
          )
          .map(([scheme, gap, change, tail]) => ({ scheme, gap, change, tail })),
      },
    );
    const route = fc.constantFrom(
      { method: 'POST', path: '/sim-swap/check', scope: 'sim-swap', covers: true },
      { method: 'GET', path: '/location', scope: 'device-location', covers: false },
    );
    await fc.assert(
      fc.asyncProperty(header, route, async (h, r) => {
        let value: string | undefined;
        if (h === undefined || typeof h === 'string') value = h;
        else {
          const t = accessToken;
          const token = {
            same: t,
            'x+': `${t}x`,
            cut: t.slice(1),
            upper: t.toUpperCase(),
            '=': `${t}=`,
            space: `${t} x`,
            '.': `${t}.`,
          }[h.change]!;
          value = `${h.scheme}${h.gap}${token}${h.tail}`;
        }
        const answer = await gw.send({
          method: r.method,
          path: r.path,
          headers: value === undefined ? {} : { authorization: value },
        });
        expectSafe(answer);

        // The model. Node strips leading and trailing whitespace from header values.
        const seen = value?.replace(/^[ \t]+|[ \t]+$/g, '');
        const challenge = answer.headers['www-authenticate'] ?? '';
        const [bearer, dpop] = challenge.split(/, (?=DPoP )/);
        if (answer.status !== 200) {
          expect(bearer!.startsWith(`Bearer realm="${REALM}"`)).toBe(true);
          expect(bearer).toContain(`scope="${r.scope}"`);
          expect(dpop!.startsWith(`DPoP realm="${REALM}"`)).toBe(true);
          expect(dpop!.endsWith(`scope="${r.scope}", ${ALGS}`)).toBe(true);
        }
        const scheme = seen === undefined ? undefined : /^(Bearer|DPoP)(\s|$)/i.exec(seen)?.[1]?.toLowerCase();
        if (scheme === undefined) {
          expect(answer.status).toBe(401);
          expect(challenge).not.toContain('error=');
          expect(answer.text).toBe('');
          return;
        }
        const token = B64TOKEN.exec(seen!)?.[1];
        const [status, error] =
          token === undefined
            ? [400, 'invalid_request']
            : token !== accessToken || scheme === 'dpop'
              ? [401, 'invalid_token']
              : r.covers
                ? [200, undefined]
                : [403, 'insufficient_scope'];
        expect(answer.status, `${JSON.stringify(value)} → ${answer.text}`).toBe(status);
        if (error === undefined) {
          expect(JSON.parse(answer.text)).toMatchObject({ subscriber: 'sub-alice', clientId: 'app-1' });
          return;
        }
        // The error goes in the challenge of the scheme the token came with, and only there.
        const [withError, without] = scheme === 'dpop' ? [dpop!, bearer!] : [bearer!, dpop!];
        expect(withError).toContain(`error="${error}"`);
        expect(without).not.toContain('error=');
        const description = /error_description="([^"]*)"/.exec(challenge)?.[1];
        if (description !== undefined) expect(description).toMatch(DESCRIPTION_CHARSET);
        expect(expectJsonError(answer, [error]).error).toBe(error);
      }),
      { numRuns: 500 },
    );
  });

  it('keeps serving: the token still opens the API after all of it', async () => {
    const answer = await gw.send({
      method: 'POST',
      path: '/sim-swap/check',
      headers: { authorization: `Bearer ${accessToken}` },
    });
    expect(answer.status).toBe(200);
  });
});
