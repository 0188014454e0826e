/**
 * node-oidc-provider 9 as a second, independent gateway for the app side's tests: CIBA poll mode, the code
 * flow with PKCE and RFC 9207 `iss`, revocation and introspection, client_secret_basic and private_key_jwt
 * clients, and request objects (JAR at /authorize, signed requests at bc-authorize).
 *
 * The subscriber "network" is the login_hint: interactions finish at once for the account it names (Alice
 * without one), and are denied for DENIED_HINT. CIBA requests for HELD_HINT wait for `approve()` /
 * `deny()`; the others are approved before bc-authorize answers.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPairSync } from 'node:crypto';
import Provider, { errors, type ClientMetadata, type Configuration } from 'oidc-provider';
import { Tamper, rewriteJsonResponse } from './json-rewrite.js';

export const OP_ACCOUNTS: Record<string, string> = { 'tel:+34600000001': 'sub-alice', 'tel:+34600000002': 'sub-bob' };
export const HELD_HINT = 'tel:+34600000002';
export const DENIED_HINT = 'tel:+34600000003';

export interface OidcProviderGateway {
  url: string;
  issuer: string;
  provider: Provider;
  /** Rewrites JSON responses per endpoint (`token`, `backchannel`…). */
  tamper: Tamper;
  /** Decides a held CIBA request. */
  approve(authReqId: string): Promise<void>;
  deny(authReqId: string): Promise<void>;
  close(): Promise<void>;
}

type Held = {
  request: InstanceType<Provider['BackchannelAuthenticationRequest']>;
  accountId: string;
  clientId: string;
  scope: string;
};

export async function startOidcProvider(clients: ClientMetadata[], scopes: string[]): Promise<OidcProviderGateway> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const issuer = `${url}/op`;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const held = new Map<string, Held>();

  const approveGrant = async (accountId: string, clientId: string, scope: string): Promise<string> => {
    const grant = new provider.Grant({ accountId, clientId });
    grant.addOIDCScope(scope);
    return grant.save();
  };

  const configuration: Configuration = {
    clients,
    jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'op-rs256', use: 'sig', alg: 'RS256' }] },
    scopes,
    cookies: { keys: ['client-tests-only'] },
    ttl: {
      BackchannelAuthenticationRequest: 120,
      AccessToken: 3600,
      IdToken: 3600,
      Grant: 3600,
      Interaction: 600,
      Session: 600,
      AuthorizationCode: 60,
    },
    findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
    interactions: { url: (_ctx, interaction) => `/op/interaction/${interaction.uid}` },
    // A new refresh token at every use, as this package's gateway does (the default rotates only late in its life).
    rotateRefreshToken: true,
    features: {
      devInteractions: { enabled: false },
      revocation: { enabled: true },
      introspection: { enabled: true },
      requestObjects: { enabled: true, requireSignedRequestObject: false },
      ciba: {
        enabled: true,
        deliveryModes: ['poll'],
        processLoginHint: async (_ctx, loginHint) => OP_ACCOUNTS[loginHint ?? ''],
        processLoginHintToken: async () => undefined,
        validateBindingMessage: async () => {},
        validateRequestContext: async () => {},
        verifyUserCode: async () => {},
        triggerAuthenticationDevice: async (_ctx, request, account, client) => {
          const scope = request.scope ?? 'openid';
          if (account.accountId === OP_ACCOUNTS[HELD_HINT]) {
            held.set(request.jti, { request, accountId: account.accountId, clientId: client.clientId, scope });
            return;
          }
          const grant = await provider.Grant.find(await approveGrant(account.accountId, client.clientId, scope));
          await provider.backchannelResult(request, grant!);
        },
      },
    },
  };
  const provider = new Provider(issuer, configuration);
  const tamper = new Tamper();
  const callback = provider.callback();

  async function interaction(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const details = await provider.interactionDetails(req, res);
    const params = details.params as Record<string, string | undefined>;
    if (params.login_hint === DENIED_HINT) {
      await provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: 'the subscriber said no' },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    const accountId = OP_ACCOUNTS[params.login_hint ?? 'tel:+34600000001'] ?? 'sub-alice';
    const grantId = await approveGrant(accountId, params.client_id!, params.scope ?? '');
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId }, consent: { grantId } },
      { mergeWithLastSubmission: false },
    );
  }

  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const path = req.url ?? '/';
    if (path.startsWith('/op/interaction/')) {
      interaction(req, res).catch(() => {
        res.statusCode = 500;
        res.end();
      });
      return;
    }
    // node-oidc-provider sends no `interval`, so clients would wait CIBA's default 5 s; this gateway says 1 s.
    if (path === '/op/backchannel')
      rewriteJsonResponse(res, (body) => {
        if (body.auth_req_id !== undefined) body.interval = 1;
      });
    tamper.apply(path, res);
    // Mounted at the issuer's path, as Express's app.use('/op', …) would: node-oidc-provider reads the mount
    // path from originalUrl.
    (req as http.IncomingMessage & { originalUrl?: string }).originalUrl = path;
    req.url = path.startsWith('/op') ? path.slice(3) || '/' : path;
    callback(req, res);
  });

  return {
    url,
    issuer,
    provider,
    tamper,
    async approve(authReqId) {
      const entry = held.get(authReqId);
      if (!entry) throw new Error('no held CIBA request with that id');
      held.delete(authReqId);
      const grant = await provider.Grant.find(await approveGrant(entry.accountId, entry.clientId, entry.scope));
      await provider.backchannelResult(entry.request, grant!);
    },
    async deny(authReqId) {
      const entry = held.get(authReqId);
      if (!entry) throw new Error('no held CIBA request with that id');
      held.delete(authReqId);
      await provider.backchannelResult(entry.request, new errors.AccessDenied('the subscriber said no'));
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
