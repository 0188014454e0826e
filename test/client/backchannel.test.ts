import { afterEach, describe, expect, it } from 'vitest';
import express from 'express';
import { createNetAuth, type NetAuthOptions } from '../../lib/index.js';
import { createNetAuthClient } from '../../lib/client/index.js';
import { CLIENTS, POLICY, SECRET, SUBSCRIBERS, SIM_SWAP, LOCATION } from '../helpers/gateway.js';
import { listen } from '../helpers/listen.js';
import { rejection } from '../helpers/client-app.js';
import { describeNoSecretsInErrors, rememberSecrets, watchSecrets } from '../helpers/client-secrets.js';

watchSecrets();
rememberSecrets(SECRET);

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

/** A listening gateway; `intercept` runs before the router on /apigateway/token. */
async function gateway(options: Partial<NetAuthOptions> = {}, intercept?: express.RequestHandler) {
  const app = express();
  const server = await listen(app);
  const netauth = createNetAuth({
    issuer: `${server.url}/apigateway`,
    clients: CLIENTS,
    subscribers: SUBSCRIBERS,
    consentPolicy: POLICY,
    lifetimes: { pollInterval: 1 },
    ...options,
  });
  if (intercept) app.post('/apigateway/token', intercept);
  app.use('/apigateway', netauth.router);
  app.post(
    '/sim-swap/check',
    netauth.guard({ scope: 'sim-swap' }),
    (req, res) => void res.json({ subscriber: req.netauth?.subscriber.id }),
  );
  closers.push(server.close, () => netauth.close());
  const client = createNetAuthClient({
    gateway: `${server.url}/apigateway`,
    clientId: 'app-1',
    clientSecret: SECRET,
    allowInsecureRequests: true,
  });
  return { url: server.url, netauth, client };
}

describe('backend-flow client', () => {
  it('gets a token the service API accepts', async () => {
    const { url, client } = await gateway();
    const token = await client.backchannel({ login_hint: 'tel:+34600000001', scope: SIM_SWAP });
    expect(token.scope).toBe(SIM_SWAP);
    const res = await fetch(`${url}/sim-swap/check`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token.access_token}` },
    });
    expect(await res.json()).toEqual({ subscriber: 'sub-alice' });
  });

  it('gets a token for a pending request approved later (out-of-band consent)', async () => {
    const { netauth, client } = await gateway({
      backchannel: {
        onConsentRequired: (req) => {
          setTimeout(
            () =>
              void netauth.consent.grant({ clientId: req.clientId, subscriberId: req.subscriber.id, scope: req.scope }),
            1200,
          );
        },
      },
    });
    const token = await client.backchannel({ login_hint: 'tel:+34600000002', scope: LOCATION });
    expect(token.scope).toBe(LOCATION);
  });

  it('backs off on slow_down: the next poll waits interval + 5 s', async () => {
    const polls: number[] = [];
    const { client } = await gateway({}, (_req, res, next) => {
      polls.push(Date.now());
      if (polls.length === 1) {
        res.status(400).set('Cache-Control', 'no-store').json({ error: 'slow_down' });
        return;
      }
      next();
    });
    const token = await client.backchannel({ login_hint: 'tel:+34600000001', scope: SIM_SWAP });
    expect(token.access_token).toBeTruthy();
    expect(polls).toHaveLength(2);
    // CIBA §11: after slow_down the interval MUST grow by 5 s (here from 1 s to 6 s): a protocol rule, not a speed.
    expect(polls[1]! - polls[0]!).toBeGreaterThanOrEqual(5900);
  });

  it('honours Retry-After on a 503 and then succeeds', async () => {
    let refused = 0;
    const { client } = await gateway({}, (_req, res, next) => {
      if (refused++ === 0) {
        res.status(503).set('Retry-After', '1').json({ error: 'temporarily_unavailable' });
        return;
      }
      next();
    });
    const token = await client.backchannel({ login_hint: 'tel:+34600000001', scope: SIM_SWAP });
    expect(token.access_token).toBeTruthy();
    expect(refused).toBe(2);
  });

  it('surfaces access_denied as kind "denied"', async () => {
    const { netauth, client } = await gateway({
      backchannel: {
        onConsentRequired: (req) =>
          void netauth.consent.deny({ clientId: req.clientId, subscriberId: req.subscriber.id, scope: req.scope }),
      },
    });
    const error = await rejection(client.backchannel({ login_hint: 'tel:+34600000001', scope: LOCATION }));
    expect(error.kind).toBe('denied');
    expect(error.error).toBe('access_denied');
  });

  it('surfaces expiry as kind "expired"', async () => {
    const { client } = await gateway({ lifetimes: { pollInterval: 1, authReqId: 2 } });
    const error = await rejection(client.backchannel({ login_hint: 'tel:+34600000001', scope: LOCATION }));
    expect(error.kind).toBe('expired');
  });

  it('stops when the caller aborts', async () => {
    const { client } = await gateway();
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const error = await rejection(
      client.backchannel({ login_hint: 'tel:+34600000001', scope: LOCATION, signal: controller.signal }),
    );
    expect(error.kind).toBe('aborted');
  });

  it('bc-authorize errors are typed too', async () => {
    const { client } = await gateway();
    const unknown = await rejection(client.backchannel({ login_hint: 'tel:+34699999999', scope: SIM_SWAP }));
    expect(unknown.kind).toBe('unknown_subscriber');
    expect(unknown.error).toBe('unknown_user_id');
    const badScope = await rejection(client.backchannel({ login_hint: 'tel:+34600000001', scope: 'dpv:Unknown#x' }));
    // A refused request, not a failing gateway: 400, not 502.
    expect(badScope.kind).toBe('authorization_error');
    expect(badScope.status).toBe(400);
    expect(badScope.error).toBe('invalid_scope');
  });

  it('fetch() with the token: a service-API call that gets no answer is typed, as with a DPoP-bound token', async () => {
    const { url, client } = await gateway();
    const token = await client.backchannel({ login_hint: 'tel:+34600000001', scope: SIM_SWAP });
    expect((await client.fetch(token, `${url}/sim-swap/check`, { method: 'POST' })).status).toBe(200);
    const aborted = await rejection(
      client.fetch(token, `${url}/sim-swap/check`, { method: 'POST', signal: AbortSignal.abort() }),
    );
    expect(aborted.kind).toBe('aborted');
    const unreachable = await rejection(client.fetch(token, 'http://127.0.0.1:9/sim-swap/check', { method: 'POST' }));
    expect(unreachable.kind).toBe('unavailable');
    expect(unreachable.message).toBe('the service API could not be reached');
    // A service API that accepts the connection and never answers, given up on by the caller's timeout.
    const never = express();
    never.post('/sim-swap/check', () => undefined);
    const silent = await listen(never);
    closers.push(silent.close);
    const timedOut = await rejection(
      client.fetch(token, `${silent.url}/sim-swap/check`, { method: 'POST', signal: AbortSignal.timeout(50) }),
    );
    expect(timedOut.kind).toBe('unavailable');
    expect(timedOut.message).toBe('the service API did not answer in time');
    // A URL fetch cannot parse is the caller's bug: thrown as fetch throws it, not dressed as an outage.
    await expect(client.fetch(token, 'not a url')).rejects.toThrow(TypeError);
  });

  it('an unreachable gateway is kind "unavailable"', async () => {
    const client = createNetAuthClient({
      gateway: 'http://127.0.0.1:9/apigateway',
      clientId: 'app-1',
      clientSecret: SECRET,
      allowInsecureRequests: true,
    });
    const error = await rejection(client.backchannel({ login_hint: 'tel:+34600000001', scope: SIM_SWAP }));
    expect(error.kind).toBe('unavailable');
  });
});

describeNoSecretsInErrors('backchannel', { errors: 9, secrets: 10 });
