/**
 * The peer: node-oidc-provider 9 as a Node user would pick it for CIBA, configured like express-netauth's
 * bench server: the same endpoint paths, CIBA poll mode, one client_secret_basic client, one subscriber
 * found by `tel:` login_hint, and immediate approval (triggerAuthenticationDevice records the grant and
 * the result before bc-authorize answers, so the first poll gets the token).
 *
 * Differences that stay (reported in the output and bench/README.md):
 * - node-oidc-provider requires the `openid` scope on a CIBA request, and then signs an ID token (RS256, or ES256
 *   with BENCH_ID_TOKEN_ALG=ES256) on every token response; express-netauth's plain rows issue none, its ID-token
 *   rows sign one with the same algorithm.
 * - it runs on its own Koa stack (no Express in front).
 *
 * Its memory adapter is its own, with one change: the default one keeps the last 1,000 records only (an LRU), so an
 * access token is gone 1,000 flows later (under half a second here): userinfo refuses it, revoking it finds
 * nothing. Like express-netauth's memory store, the adapter here keeps every record for its lifetime: the same
 * adapter class on the same LRU, with the cap lifted.
 */
import http from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import Provider, { type Configuration } from 'oidc-provider';
// Not in the package's types: its own memory adapter and the LRU it stores in (lib/adapters/memory_adapter.js).
// @ts-expect-error no declaration file
import MemoryAdapter from 'oidc-provider/lib/adapters/memory_adapter.js';
// @ts-expect-error no declaration file
import LRU from 'oidc-provider/lib/helpers/lru.js';
import { BENCH_CLIENT_ID, BENCH_CLIENT_SECRET, BENCH_PHONE, ISSUER_PATH, serve } from './common.js';
import { SIM_SWAP_SCOPE } from './canned.js';
import { webCryptoSignature } from './signature-cost.js';

// BENCH_ID_TOKEN_ALG=ES256: a P-256 key and the client's id_token_signed_response_alg, so every ID token is ES256
// (the like-for-like pair of express-netauth's ES256 row); otherwise RSA-2048 and RS256, its default.
const alg = process.env.BENCH_ID_TOKEN_ALG ?? 'RS256';
if (alg !== 'RS256' && alg !== 'ES256') throw new Error(`unknown BENCH_ID_TOKEN_ALG ${alg}`);
const { privateKey } =
  alg === 'ES256'
    ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
    : generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = privateKey.export({ format: 'jwk' });

const SUBSCRIBER_ID = 'sub-bench-1';

// The default adapter's storage, with room for every record a process makes; the provider's default clock tolerance.
const storage: unknown = new LRU({ maxSize: Number.MAX_SAFE_INTEGER });
const adapter = (model: string): unknown => new MemoryAdapter(model, storage, 15);

const configuration: Configuration = {
  adapter: adapter as Configuration['adapter'],
  clients: [
    {
      client_id: BENCH_CLIENT_ID,
      client_secret: BENCH_CLIENT_SECRET,
      grant_types: ['urn:openid:params:grant-type:ciba'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
      backchannel_token_delivery_mode: 'poll',
      id_token_signed_response_alg: alg,
    },
  ],
  jwks: { keys: [{ ...jwk, kid: `bench-${alg.toLowerCase()}`, use: 'sig', alg }] },
  scopes: ['openid', SIM_SWAP_SCOPE],
  // Mounted at the server root, so the routes carry the issuer path themselves.
  routes: { backchannel_authentication: `${ISSUER_PATH}/bc-authorize`, token: `${ISSUER_PATH}/token` },
  cookies: { keys: ['bench-only-cookie-key'] },
  // express-netauth's lifetimes (docs/protocol.md), so both keep their records equally long.
  ttl: { BackchannelAuthenticationRequest: 120, Grant: 3600, AccessToken: 3600, IdToken: 3600 },
  findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  features: {
    devInteractions: { enabled: false },
    ciba: {
      enabled: true,
      deliveryModes: ['poll'],
      processLoginHint: async (_ctx, loginHint) => (loginHint === `tel:${BENCH_PHONE}` ? SUBSCRIBER_ID : undefined),
      processLoginHintToken: async () => undefined,
      validateBindingMessage: async () => {},
      validateRequestContext: async () => {},
      verifyUserCode: async () => {},
      // Immediate approval: what express-netauth does with no hook and no consent needed.
      triggerAuthenticationDevice: async (_ctx, request, account, client) => {
        const grant = new provider.Grant({ clientId: client.clientId, accountId: account.accountId });
        grant.addOIDCScope(request.scope ?? 'openid');
        await grant.save();
        await provider.backchannelResult(request, grant);
      },
    },
  },
};

const provider = new Provider(`http://127.0.0.1${ISSUER_PATH}`, configuration);

serve(http.createServer(provider.callback()), webCryptoSignature(jwk, alg));
