import { describe, expect, it } from 'vitest';
import type { ClientRegistry, NetAuthOptions, RegisteredClient } from '../../lib/index.js';
import { basic, createTestGateway, type TestGateway } from '../helpers/gateway.js';
import { CAMARA_KEY, assertionFields, clientAssertion } from '../helpers/client-jwts.js';
import { GRANTS_POLICY, POPULATION, tokenRequest } from '../helpers/grants.js';
import { recordEvents } from '../helpers/events.js';
import { memoryLogger } from '../helpers/memory-logger.js';
import { operatorChannel } from '../helpers/operator-channel.js';

/**
 * Issue 41 (and issue 42's "done when"): under `profile: 'camara'` every client record is held to the profile when
 * it is used, not only a static list at start-up. A custom registry (which declares `authMethods:
 * ['private_key_jwt']`, as the preset requires at start-up) that answers a record with a secret method has that
 * record refused at use: 401 invalid_client, and an operator-facing event and log line naming the profile's rule,
 * never the secret.
 */

const SECRET = 'a-secret-the-profile-refuses';
/** The preset requires TLS: an https: issuer (supertest needs none), which client assertions name as aud. */
const ISSUER = 'https://gateway.test/apigateway';

/** A client-credentials client of the portal, registered the profile's way. */
const KEYED: RegisteredClient = {
  clientId: 'keyed',
  tokenEndpointAuthMethod: 'private_key_jwt',
  jwks: { keys: [CAMARA_KEY.publicJwk] },
  grantTypes: ['client_credentials'],
  scopes: [POPULATION],
};

/** The same portal's record of a client that still uses a secret, by `method`. */
const secretRecord = (method: 'client_secret_basic' | 'client_secret_post'): RegisteredClient => ({
  clientId: 'secretive',
  tokenEndpointAuthMethod: method,
  clientSecret: SECRET,
  grantTypes: ['client_credentials'],
  scopes: [POPULATION],
});

/** A portal that declares the profile's method, whatever its records say. */
const portal = (records: readonly RegisteredClient[]): ClientRegistry => ({
  authMethods: ['private_key_jwt'],
  find: async (clientId) => records.find((r) => r.clientId === clientId),
});

function gateway(clients: ClientRegistry, overrides: Partial<NetAuthOptions> = {}): TestGateway {
  return createTestGateway({
    profile: 'camara',
    issuer: ISSUER,
    clients,
    consentPolicy: GRANTS_POLICY,
    // The preset confirms consent through the operator's channel (the policy has consent rules).
    sendConsentConfirmation: operatorChannel().send,
    ...overrides,
  });
}

const bySecret = (gw: TestGateway, method: 'client_secret_basic' | 'client_secret_post') => {
  const form = { grant_type: 'client_credentials', scope: POPULATION };
  return method === 'client_secret_basic'
    ? tokenRequest(gw.app, form, basic('secretive', SECRET))
    : tokenRequest(gw.app, { ...form, client_id: 'secretive', client_secret: SECRET });
};

describe("profile: 'camara' holds a custom registry's records to the profile at use", () => {
  it.each(['client_secret_basic', 'client_secret_post'] as const)(
    "a record using %s, with its right secret: 401 invalid_client, reported once naming the profile's rule, no secret",
    async (method) => {
      const log = memoryLogger();
      const gw = gateway(portal([KEYED, secretRecord(method)]), { logger: log.logger });
      const events = recordEvents(gw.netauth);
      for (let i = 0; i < 2; i += 1) {
        const res = await bySecret(gw, method);
        expect(res.status).toBe(401);
        expect(res.body.error).toBe('invalid_client');
        expect(res.body).not.toHaveProperty('access_token');
      }
      expect(events.of('client.registration_refused')).toEqual([
        {
          clientId: 'secretive',
          field: 'tokenEndpointAuthMethod',
          reason: expect.stringContaining(`profile 'camara' requires private_key_jwt, and this client uses ${method}`),
        },
      ]);
      expect(log.text()).toContain("profile 'camara' requires private_key_jwt");
      expect(log.text()).not.toContain(SECRET);
      expect(JSON.stringify(events.all)).not.toContain(SECRET);
    },
  );

  it("the registry's private_key_jwt record is served beside it", async () => {
    const gw = gateway(portal([KEYED, secretRecord('client_secret_basic')]));
    const now = Math.floor(gw.clock.now / 1000);
    const assertion = await clientAssertion({ now, clientId: 'keyed', claims: { aud: ISSUER } });
    const res = await tokenRequest(gw.app, {
      grant_type: 'client_credentials',
      scope: POPULATION,
      ...assertionFields(assertion, 'keyed'),
    });
    expect(res.status).toBe(200);
  });

  it('without the profile the same record is served (the rule is the profile’s)', async () => {
    const gw = createTestGateway({
      clients: portal([secretRecord('client_secret_basic')]),
      consentPolicy: GRANTS_POLICY,
    });
    expect((await bySecret(gw, 'client_secret_basic')).status).toBe(200);
  });
});
