/**
 * The two gateways the app side is tested against, behind one interface: this package's (createNetAuth in
 * an Express app) and node-oidc-provider (test/helpers/oidc-provider.ts). Each registers a client_secret_basic
 * client and a CAMARA client (private_key_jwt, signed requests required) for the given redirect URIs, and says
 * from its discovery metadata whether it can serve the latter.
 */
import express from 'express';
import type { JWK } from 'jose';
import { createNetAuth, type RegisteredClient } from '../../lib/index.js';
import { CLIENTS, POLICY, SECRET, SIM_SWAP, SUBSCRIBERS } from './gateway.js';
import { listen } from './listen.js';
import { rsaKey } from './keys.js';
import { Tamper, type JsonRewrite } from './json-rewrite.js';
import { DENIED_HINT, HELD_HINT, startOidcProvider } from './oidc-provider.js';

/** The CAMARA client's key pair, generated once per test file. */
export const CAMARA_KEY: JWK = rsaKey('camara-key-1');
export const CAMARA_PUBLIC: JWK = {
  kty: CAMARA_KEY.kty,
  n: CAMARA_KEY.n,
  e: CAMARA_KEY.e,
  kid: CAMARA_KEY.kid,
  alg: 'RS256',
  use: 'sig',
} as JWK;

export interface GatewayUnderTest {
  name: 'express-netauth' | 'node-oidc-provider';
  issuer: string;
  /** A scope the clients may use in both flows without a consent page. */
  scope: string;
  /** A GET service API that accepts the gateway's access tokens (Bearer) and answers JSON. */
  serviceApi: string;
  secretClient: { clientId: string; clientSecret: string };
  camaraClient: { clientId: string; privateKey: JWK };
  /**
   * Why this gateway cannot serve the CAMARA client (private_key_jwt, JAR, signed bc-authorize), read from its
   * discovery metadata; undefined when it can.
   */
  camaraUnsupported: string | undefined;
  /** login_hints: approved at once (backend flow) / held until approve() or deny() / refused at the frontend. */
  hints: { approved: string; held: string; denied: string; unknown: string };
  approve(authReqId: string): Promise<void>;
  deny(authReqId: string): Promise<void>;
  /** Rewrites the gateway's token responses while set (undefined: stop). */
  tamperToken(rewrite: JsonRewrite | undefined): void;
  close(): Promise<void>;
}

export interface RedirectUris {
  secret: string[];
  camara: string[];
}

/** What discovery must say for the CAMARA client to work; the reasons it does not. */
export function camaraGaps(metadata: Record<string, unknown>): string | undefined {
  const gaps: string[] = [];
  if (!(metadata.token_endpoint_auth_methods_supported as string[] | undefined)?.includes('private_key_jwt'))
    gaps.push('token_endpoint_auth_methods_supported lacks private_key_jwt');
  if (metadata.request_parameter_supported !== true) gaps.push('request_parameter_supported is not true');
  if (!(metadata.backchannel_authentication_request_signing_alg_values_supported as string[] | undefined)?.length)
    gaps.push('no backchannel_authentication_request_signing_alg_values_supported');
  return gaps.length > 0 ? `${gaps.join('; ')}` : undefined;
}

async function discover(issuer: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${issuer}/.well-known/openid-configuration`);
  return (await res.json()) as Record<string, unknown>;
}

export async function startNetAuthGateway(uris: RedirectUris): Promise<GatewayUnderTest> {
  const app = express();
  const server = await listen(app);
  const issuer = `${server.url}/apigateway`;
  // Registered for refresh tokens too: they are issued only when a test asks for offline_access.
  const secretClient: RegisteredClient = {
    ...CLIENTS[0]!,
    redirectUris: uris.secret,
    grantTypes: [...CLIENTS[0]!.grantTypes, 'refresh_token'],
  };
  const camaraClient: RegisteredClient = {
    clientId: 'camara-app',
    name: 'CAMARA App',
    tokenEndpointAuthMethod: 'private_key_jwt',
    jwks: { keys: [CAMARA_PUBLIC] },
    requireSignedRequestObject: true,
    redirectUris: uris.camara,
    grantTypes: ['urn:openid:params:grant-type:ciba', 'authorization_code'],
    scopes: [SIM_SWAP],
  };
  const tamper = new Tamper();
  const netauth = createNetAuth({
    issuer,
    clients: [secretClient, camaraClient],
    subscribers: SUBSCRIBERS.map((s) =>
      s.id === 'sub-alice' ? { ...s, addresses: [...s.addresses!, '127.0.0.1'] } : s,
    ),
    consentPolicy: POLICY,
    network: { mobileRanges: ['127.0.0.0/8'] },
    lifetimes: { pollInterval: 1 },
    backchannel: {
      // Bob's requests wait for the test to decide them (netauth.backchannel.approve / deny).
      authorize: (request) =>
        request.subscriber.id === 'sub-bob' ? new Promise<never>(() => {}) : Promise.resolve('approve'),
    },
  });
  app.use((req, res, next) => {
    tamper.apply(req.path, res);
    next();
  });
  app.use('/apigateway', netauth.router);
  app.get(
    '/api',
    netauth.guard({ scope: 'sim-swap' }),
    (req, res) => void res.json({ subscriber: req.netauth?.subscriber.id }),
  );
  return {
    name: 'express-netauth',
    issuer,
    scope: SIM_SWAP,
    serviceApi: `${server.url}/api`,
    secretClient: { clientId: 'app-1', clientSecret: SECRET },
    camaraClient: { clientId: 'camara-app', privateKey: CAMARA_KEY },
    camaraUnsupported: camaraGaps(await discover(issuer)),
    hints: {
      approved: 'tel:+34600000001',
      held: 'tel:+34600000002',
      denied: 'tel:+34600000002',
      unknown: 'tel:+34699999999',
    },
    approve: async (id) => void (await netauth.backchannel.approve(id)),
    deny: async (id) => void (await netauth.backchannel.deny(id)),
    tamperToken: (rewrite) => tamper.set('token', rewrite),
    close: async () => {
      await server.close();
      await netauth.close();
    },
  };
}

export async function startOidcProviderGateway(uris: RedirectUris): Promise<GatewayUnderTest> {
  // node-oidc-provider requires `openid` on CIBA requests; it then also issues an ID token.
  const scope = `openid ${SIM_SWAP}`;
  const op = await startOidcProvider(
    [
      {
        client_id: 'app-1',
        client_secret: SECRET,
        token_endpoint_auth_method: 'client_secret_basic',
        grant_types: ['authorization_code', 'urn:openid:params:grant-type:ciba', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: uris.secret,
        backchannel_token_delivery_mode: 'poll',
      },
      {
        client_id: 'camara-app',
        token_endpoint_auth_method: 'private_key_jwt',
        jwks: { keys: [CAMARA_PUBLIC as Record<string, string>] },
        grant_types: ['authorization_code', 'urn:openid:params:grant-type:ciba'],
        response_types: ['code'],
        redirect_uris: uris.camara,
        backchannel_token_delivery_mode: 'poll',
        // Refuse anything unsigned: a passing test proves the requests were signed.
        require_signed_request_object: true,
        request_object_signing_alg: 'RS256',
        backchannel_authentication_request_signing_alg: 'RS256',
      },
    ],
    ['openid', 'offline_access', SIM_SWAP],
  );
  return {
    name: 'node-oidc-provider',
    issuer: op.issuer,
    scope,
    // The userinfo endpoint stands in for a service API: it takes the access token as a Bearer.
    serviceApi: `${op.issuer}/me`,
    secretClient: { clientId: 'app-1', clientSecret: SECRET },
    camaraClient: { clientId: 'camara-app', privateKey: CAMARA_KEY },
    camaraUnsupported: camaraGaps(await discover(op.issuer)),
    hints: { approved: 'tel:+34600000001', held: HELD_HINT, denied: DENIED_HINT, unknown: 'tel:+34699999999' },
    approve: (id) => op.approve(id),
    deny: (id) => op.deny(id),
    tamperToken: (rewrite) => op.tamper.set('token', rewrite),
    close: () => op.close(),
  };
}

export const GATEWAYS = [
  { name: 'express-netauth', start: startNetAuthGateway },
  { name: 'node-oidc-provider', start: startOidcProviderGateway },
] as const;
