import { describe, expect, it } from 'vitest';
import type { Response } from 'supertest';
import request from 'supertest';
import type { RegisteredClient } from '../../../lib/index.js';
import { CLIENTS, ISSUER, SIM_SWAP, basic } from '../../helpers/gateway.js';
import { FOREIGN_CAMARA_KEY, assertionFields, clientAssertion } from '../../helpers/client-jwts.js';
import {
  BEARER_CLIENT,
  GRANTS_CLIENTS,
  JWT_BEARER,
  bearerAssertion,
  createGrantsGateway,
} from '../../helpers/grants.js';

/**
 * Issue 42, finding 10 (second half): a caller who proves nothing learns nothing of a client id's registration.
 * For each way of presenting credentials, the answer to credentials that do not hold is one answer (status, error,
 * description, headers) whether the id is unknown, a client_secret_basic or client_secret_post client, or a
 * private_key_jwt client: at /token (with the JWT bearer grant's assertion as the only authentication too),
 * /bc-authorize, /introspect and /revoke.
 */

const POST_CLIENT: RegisteredClient = {
  ...CLIENTS[1]!,
  clientId: 'post-app',
  tokenEndpointAuthMethod: 'client_secret_post',
};

/** The ids compared: none registered, one per secret method, one private_key_jwt client. */
const IDS = {
  unknown: 'nobody',
  'client_secret_basic client': 'app-1',
  'client_secret_post client': 'post-app',
  'private_key_jwt client': BEARER_CLIENT.clientId,
} as const;

const ENDPOINTS = {
  token: { grant_type: 'client_credentials', scope: SIM_SWAP },
  'bc-authorize': { login_hint: 'tel:+34600000001', scope: SIM_SWAP },
  introspect: { token: 'some-token' },
  revoke: { token: 'some-token' },
} as const;

type Presented = (clientId: string, now: number) => Promise<{ form: Record<string, string>; authorization?: string }>;

/** Credentials that do not hold, as each method presents them: a wrong secret, an assertion by a foreign key. */
const PRESENTED: Record<string, Presented> = {
  'a wrong secret, Basic': async (id) => ({ form: {}, authorization: basic(id, 'wrong-secret') }),
  'a wrong secret in the body': async (id) => ({ form: { client_id: id, client_secret: 'wrong-secret' } }),
  'a client assertion signed by a foreign key': async (id, now) => ({
    form: assertionFields(
      await clientAssertion({ now, clientId: id, key: FOREIGN_CAMARA_KEY, claims: { aud: ISSUER } }),
      id,
    ),
  }),
};

/** What a caller sees, without what differs from one response to the next whatever the request (the date). */
function answer(res: Response) {
  const { date: _date, ...headers } = res.headers as Record<string, string>;
  return { status: res.status, body: res.body as unknown, headers };
}

function gateway() {
  return createGrantsGateway({ clients: [...GRANTS_CLIENTS, POST_CLIENT] });
}

describe('one answer for unknown and registered ids, whatever method was presented', () => {
  for (const [endpoint, form] of Object.entries(ENDPOINTS)) {
    it.each(Object.keys(PRESENTED))(`/${endpoint}, %s: the same answer for every kind of id`, async (presented) => {
      const gw = gateway();
      const now = Math.floor(gw.clock.now / 1000);
      const answers: Record<string, ReturnType<typeof answer>> = {};
      for (const [kind, id] of Object.entries(IDS)) {
        const credentials = await PRESENTED[presented]!(id, now);
        const req = request(gw.app).post(`/apigateway/${endpoint}`).type('form');
        if (credentials.authorization !== undefined) req.set('Authorization', credentials.authorization);
        answers[kind] = answer(await req.send({ ...form, ...credentials.form }));
      }
      expect(answers.unknown!.status).toBe(401);
      expect(answers.unknown!.body).toMatchObject({ error: 'invalid_client' });
      for (const kind of Object.keys(IDS)) expect(answers[kind], kind).toEqual(answers.unknown);
    });
  }

  it("/token, the JWT bearer grant's assertion as the only authentication, signed by a foreign key: the same answer for every kind of id", async () => {
    const gw = gateway();
    const now = Math.floor(gw.clock.now / 1000);
    const answers: Record<string, ReturnType<typeof answer>> = {};
    for (const [kind, iss] of Object.entries(IDS)) {
      const assertion = await bearerAssertion('tel:+34600000001', SIM_SWAP, {
        now,
        key: FOREIGN_CAMARA_KEY,
        claims: { iss },
      });
      const res = await request(gw.app)
        .post('/apigateway/token')
        .type('form')
        .send({ grant_type: JWT_BEARER, assertion });
      answers[kind] = answer(res);
    }
    expect(answers.unknown!.status).toBe(401);
    expect(answers.unknown!.body).toMatchObject({ error: 'invalid_client' });
    for (const kind of Object.keys(IDS)) expect(answers[kind], kind).toEqual(answers.unknown);
  });

  it("the private_key_jwt client's own key still gets the grant's detail: an assertion it signed that fails a claim is invalid_grant", async () => {
    const gw = gateway();
    const now = Math.floor(gw.clock.now / 1000);
    const assertion = await bearerAssertion('tel:+34600000001', SIM_SWAP, { now, claims: { exp: now + 301 } });
    const res = await request(gw.app)
      .post('/apigateway/token')
      .type('form')
      .send({ grant_type: JWT_BEARER, assertion });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'invalid_grant', error_description: expect.stringContaining('300 s') });
  });
});
