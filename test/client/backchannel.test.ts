import { afterEach, describe, expect, it } from 'vitest';
import express from 'express';
import { createNetAuth, type NetAuthOptions } from '../../lib/index.js';
import { createNetAuthClient, type BackchannelProgress } from '../../lib/client/index.js';
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

/**
 * The clock the gateway and the client share: the client's waits between polls advance it and are recorded, so
 * a test asserts the waits the client asked for (CIBA's intervals) without waiting.
 */
function fakeClock() {
  const clock = {
    now: Date.now(),
    /** Every wait the client asked for, in ms. */
    waits: [] as number[],
    sleep: async (ms: number, signal?: AbortSignal): Promise<void> => {
      signal?.throwIfAborted();
      clock.waits.push(ms);
      clock.now += ms;
    },
  };
  return clock;
}

/**
 * A listening gateway; `intercept` runs before the router on /apigateway/token. The gateway and the client run
 * on one fake clock, unless `realTime` (the client's own timer, for what only a real timer does).
 */
async function gateway(
  options: Partial<NetAuthOptions> = {},
  intercept?: express.RequestHandler,
  { realTime = false } = {},
) {
  const clock = fakeClock();
  const app = express();
  const server = await listen(app);
  const netauth = createNetAuth({
    issuer: `${server.url}/apigateway`,
    clients: CLIENTS,
    subscribers: SUBSCRIBERS,
    consentPolicy: POLICY,
    lifetimes: { pollInterval: 1 },
    ...(realTime ? {} : { now: () => clock.now }),
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
    ...(realTime ? {} : { now: () => clock.now, sleep: (ms, signal) => clock.sleep(ms, signal) }),
  });
  return { url: server.url, netauth, client, clock };
}

describe('backend-flow client', () => {
  it('gets a token the service API accepts; the poll waits the interval first', async () => {
    const { url, client, clock } = await gateway();
    const token = await client.backchannel({ login_hint: 'tel:+34600000001', scope: SIM_SWAP });
    expect(token.scope).toBe(SIM_SWAP);
    expect(clock.waits).toEqual([1000]);
    const res = await fetch(`${url}/sim-swap/check`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token.access_token}` },
    });
    expect(await res.json()).toEqual({ subscriber: 'sub-alice' });
  });

  it('gets a token for a pending request approved later (out-of-band consent), polling at the interval', async () => {
    let asked: { clientId: string; subscriberId: string; scope: string } | undefined;
    const { netauth, client, clock } = await gateway({
      lifetimes: { pollInterval: 2 },
      backchannel: {
        onConsentRequired: (req) => {
          asked = { clientId: req.clientId, subscriberId: req.subscriber.id, scope: req.scope };
        },
      },
    });
    const progress: BackchannelProgress[] = [];
    const token = await client.backchannel({
      login_hint: 'tel:+34600000002',
      scope: LOCATION,
      onProgress: (step) => {
        progress.push(step);
        // The subscriber consents after the second unanswered poll.
        if (step.polls === 2 && asked) void netauth.consent.grant(asked);
      },
    });
    expect(token.scope).toBe(LOCATION);
    expect(progress.map((step) => step.status)).toEqual(['started', 'pending', 'pending']);
    // Every poll waited the gateway's interval (2 s): the gateway, on the same clock, never answered slow_down.
    expect(clock.waits).toEqual([2000, 2000, 2000]);
  });

  it('backs off on slow_down: the next poll waits interval + 5 s, and the request carries the grown interval', async () => {
    let polls = 0;
    const { client, clock } = await gateway({}, (_req, res, next) => {
      if (++polls === 1) {
        res.status(400).set('Cache-Control', 'no-store').json({ error: 'slow_down' });
        return;
      }
      next();
    });
    const progress: BackchannelProgress[] = [];
    const token = await client.backchannel({
      login_hint: 'tel:+34600000001',
      scope: SIM_SWAP,
      onProgress: (step) => progress.push(step),
    });
    expect(token.access_token).toBeTruthy();
    expect(polls).toBe(2);
    // CIBA §11: after slow_down the interval MUST grow by 5 s (here from 1 s to 6 s).
    expect(clock.waits).toEqual([1000, 6000]);
    expect(progress[1]).toMatchObject({ status: 'slow_down', polls: 1, request: { interval: 6 } });
  });

  it('honours a Retry-After longer than the interval on a 503, then succeeds', async () => {
    let refused = 0;
    const { client, clock } = await gateway({}, (_req, res, next) => {
      if (refused++ === 0) {
        res.status(503).set('Retry-After', '3').json({ error: 'temporarily_unavailable' });
        return;
      }
      next();
    });
    const token = await client.backchannel({ login_hint: 'tel:+34600000001', scope: SIM_SWAP });
    expect(token.access_token).toBeTruthy();
    expect(refused).toBe(2);
    expect(clock.waits).toEqual([1000, 3000]);
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

  it('the expiry ends polling: "expired", and no poll is sent that could only arrive after it', async () => {
    const sent: number[] = [];
    const { client, clock } = await gateway({ lifetimes: { pollInterval: 1, authReqId: 5 } }, (_req, _res, next) => {
      sent.push(clock.now);
      next();
    });
    const started = clock.now;
    const error = await rejection(client.backchannel({ login_hint: 'tel:+34600000001', scope: LOCATION }));
    expect(error.kind).toBe('expired');
    // Polls at 1, 2, 3 and 4 s; the next would be due at 5 s, when the request expires.
    expect(clock.waits).toEqual([1000, 1000, 1000, 1000]);
    expect(sent.map((at) => at - started)).toEqual([1000, 2000, 3000, 4000]);
  });

  it('stops when the caller aborts during the wait (the default timer)', async () => {
    const { client } = await gateway({}, undefined, { realTime: true });
    const controller = new AbortController();
    const error = await rejection(
      client.backchannel({
        login_hint: 'tel:+34600000001',
        scope: LOCATION,
        signal: controller.signal,
        onProgress: (step) => {
          // Once the 1 s timer runs.
          if (step.status === 'started') setImmediate(() => controller.abort());
        },
      }),
    );
    expect(error.kind).toBe('aborted');
  });

  it('stops when the caller aborts, even if an injected sleep does not heed the signal', async () => {
    const { client, clock } = await gateway();
    const controller = new AbortController();
    // A sleep that ignores the signal, as a careless test double might.
    clock.sleep = async (ms) => {
      clock.waits.push(ms);
      controller.abort();
    };
    const progress: BackchannelProgress[] = [];
    const error = await rejection(
      client.backchannel({
        login_hint: 'tel:+34600000002',
        scope: LOCATION,
        signal: controller.signal,
        onProgress: (step) => progress.push(step),
      }),
    );
    expect(error.kind).toBe('aborted');
    // Aborted after the first wait, before its poll.
    expect(clock.waits).toEqual([1000]);
    expect(progress.map((step) => step.status)).toEqual(['started']);
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

describeNoSecretsInErrors('backchannel', { errors: 10, secrets: 10 });
