import { errorMonitor } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import express from 'express';
import { releaseListenersOnClose } from '../../../lib/gateway/http/release-listeners.js';
import { APP1, SIM_SWAP, createTestGateway } from '../../helpers/gateway.js';
import { listen } from '../../helpers/listen.js';

/**
 * After a response closes, the router and the guard empty its listener table (lib/gateway/http/release-listeners.ts),
 * so a finished request is not kept alive through it. What must hold: every listener of the request and the response
 * still runs, the application's too, and afterwards the response's table holds nothing.
 */

function closed(emitter: IncomingMessage | ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    if (emitter.closed) resolve();
    else emitter.once('close', () => setImmediate(resolve));
  });
}

const servers: Array<{ close(): Promise<void> }> = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

describe('listener tables released after close', () => {
  it('every listener still runs, the ones added after it too; then the table is empty', async () => {
    const seen: string[] = [];
    let exchange: { req: IncomingMessage; res: ServerResponse } | undefined;
    const app = express();
    app.post('/echo', (req, res) => {
      releaseListenersOnClose(res);
      res.on('finish', () => seen.push('res finish'));
      res.on('close', () => seen.push('res close'));
      res.once('close', () => seen.push('res close once'));
      res.on(errorMonitor, () => seen.push('never'));
      req.on('close', () => seen.push('req close'));
      exchange = { req, res };
      req.resume();
      req.on('end', () => res.json({ ok: true }));
    });
    const server = await listen(app);
    servers.push(server);

    const answer = await fetch(`${server.url}/echo`, { method: 'POST', body: 'x=1' });
    expect(await answer.json()).toEqual({ ok: true });
    await Promise.all([closed(exchange!.req), closed(exchange!.res)]);

    expect(seen.sort()).toEqual(['req close', 'res close', 'res close once', 'res finish']);
    const { res } = exchange!;
    expect(res.eventNames()).toEqual([]);
    expect(res.listenerCount('close')).toBe(0);
    // Nothing is left in the table itself, symbols included (Node's own field, read here to check just that).
    const table = (res as unknown as { _events: Record<PropertyKey, unknown> })._events;
    expect(Reflect.ownKeys(table).filter((name) => table[name] !== undefined)).toEqual([]);
    // The response still works as an emitter afterwards.
    let late = 0;
    res.on('close', () => late++);
    res.emit('close');
    expect(late).toBe(1);
  });

  it('the router and the guard release them: a token request and a guarded call', async () => {
    const { app: gateway } = createTestGateway();
    const exchanges: Array<{ req: IncomingMessage; res: ServerResponse }> = [];
    const app = express();
    // Sees each exchange first, then hands it to the gateway's app (router and guarded routes).
    app.use((req, res, next) => {
      exchanges.push({ req, res });
      next();
    });
    app.use(gateway);
    const server = await listen(app);
    servers.push(server);

    const form = { 'content-type': 'application/x-www-form-urlencoded', authorization: APP1 };
    const started = await fetch(`${server.url}/apigateway/bc-authorize`, {
      method: 'POST',
      headers: form,
      body: new URLSearchParams({ login_hint: 'tel:+34600000001', scope: SIM_SWAP }),
    });
    expect(started.status).toBe(200);
    const { auth_req_id } = (await started.json()) as { auth_req_id: string };
    const polled = await fetch(`${server.url}/apigateway/token`, {
      method: 'POST',
      headers: form,
      body: new URLSearchParams({ grant_type: 'urn:openid:params:grant-type:ciba', auth_req_id }),
    });
    expect(polled.status).toBe(200);
    const { access_token } = (await polled.json()) as { access_token: string };
    const guarded = await fetch(`${server.url}/sim-swap/check`, { method: 'POST', headers: { authorization: `Bearer ${access_token}` } });
    expect(guarded.status).toBe(200);

    expect(exchanges).toHaveLength(3);
    for (const { req, res } of exchanges) {
      await Promise.all([closed(req), closed(res)]);
      // The request keeps none of the form reader's listeners (nor any closure of the package's).
      expect({ url: req.url, res: res.eventNames(), data: req.listenerCount('data'), end: req.listeners('end').filter((l) => l.name !== 'clearIncoming') }).toEqual({
        url: req.url,
        res: [],
        data: 0,
        end: [],
      });
    }
  });
});
