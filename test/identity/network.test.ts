import { afterEach, describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express, { type Request } from 'express';
import { NetworkIdentifier } from '../../lib/identity/network.js';
import { StaticSubscriberDirectory } from '../../lib/index.js';
import request from 'supertest';
import { ISSUER, MOBILE_RANGES, PORT_HEADER, SUBSCRIBERS, createTestGateway } from '../helpers/gateway.js';
import {
  ALICE_IP,
  APP1_AUTH,
  BOB_IP,
  CALLBACK,
  CGNAT_IP,
  authorize,
  authorizeQuery,
  callApi,
  callback,
  redeem,
  type Device,
  type Query,
} from '../helpers/frontend.js';
import type { TestGateway } from '../helpers/gateway.js';

/** docs/protocol.md, "Frontend flow", steps 3 and 4: who is on the other end of the connection. */

const NOT_IDENTIFIED = 'subscriber not identified by the mobile network';

/** The subscriber a code was issued for, as the service API sees it. */
async function subscriberOf(gw: TestGateway, overrides: Query, device: Device): Promise<string> {
  const res = await authorize(gw.app, overrides, device);
  const q = callback(res);
  if (q.code === undefined) throw new Error(`no code: ${q.error ?? ''} ${q.error_description ?? ''}`);
  const token = await redeem(gw.app, { code: q.code, redirect_uri: CALLBACK }, APP1_AUTH);
  const api = await callApi(gw.app, token.body.access_token as string);
  return api.body.subscriber as string;
}

function expectDenied(res: { headers: Record<string, unknown> }, description = NOT_IDENTIFIED): void {
  const q = Object.fromEntries(new URL(res.headers.location as string).searchParams);
  expect(q.error).toBe('access_denied');
  expect(q.error_description).toBe(description);
  expect(q.state).toBe('state-123');
  expect(q.iss).toBe(ISSUER);
  expect(q.code).toBeUndefined();
}

describe('network identification', () => {
  const gw = createTestGateway({
    subscribers: [...SUBSCRIBERS, { id: 'sub-carol', phoneNumber: '+34600000003', addresses: ['192.168.1.10'] }],
  });

  it('identifies the subscriber from the device address', async () => {
    expect(await subscriberOf(gw, {}, { ip: ALICE_IP })).toBe('sub-alice');
    expect(await subscriberOf(gw, {}, { ip: BOB_IP })).toBe('sub-bob');
  });

  it.each([
    ['a public address (WiFi at home)', '198.51.100.7'],
    ['a private address outside the mobile ranges (tethering, another network)', '172.16.0.5'],
    ['an IPv6 address outside the ranges', '2001:db9::1'],
  ])('outside the mobile ranges: access_denied (%s)', async (_name, ip) => {
    expectDenied(await authorize(gw.app, {}, { ip }));
  });

  it('outside the mobile ranges even when the directory knows the address: access_denied', async () => {
    expectDenied(await authorize(gw.app, {}, { ip: '192.168.1.10' }));
  });

  it('inside the ranges but not mapped to any subscriber: access_denied', async () => {
    expectDenied(await authorize(gw.app, {}, { ip: '10.20.9.9' }));
  });

  it('IPv4-mapped IPv6 is the IPv4 address', async () => {
    expect(await subscriberOf(gw, {}, { ip: `::ffff:${ALICE_IP}` })).toBe('sub-alice');
  });

  it('IPv6 in any textual form', async () => {
    expect(await subscriberOf(gw, {}, { ip: '2001:db8::1' })).toBe('sub-alice');
    expect(await subscriberOf(gw, {}, { ip: '2001:0db8:0000:0000:0000:0000:0000:0001' })).toBe('sub-alice');
  });

  it('CGNAT: the edge-supplied source port picks the subscriber behind a shared address', async () => {
    expect(await subscriberOf(gw, {}, { ip: CGNAT_IP, port: '1500' })).toBe('sub-alice');
    expect(await subscriberOf(gw, {}, { ip: CGNAT_IP, port: '3000' })).toBe('sub-bob');
  });

  it('CGNAT: a shared address without a port, or with a port nobody holds, names no one', async () => {
    expectDenied(await authorize(gw.app, {}, { ip: CGNAT_IP }));
    expectDenied(await authorize(gw.app, {}, { ip: CGNAT_IP, port: '9000' }));
  });

  it.each(['0', '65536', 'abc', '1500, 3000', '-1', ''])(
    'CGNAT: a malformed port header (%j) identifies no one',
    async (port) => {
      expectDenied(await authorize(gw.app, {}, { ip: CGNAT_IP, port }));
    },
  );

  it('an address outside the ranges is refused whatever the port', async () => {
    expectDenied(await authorize(gw.app, {}, { ip: '198.51.100.7', port: '1500' }));
  });
});

describe('trust proxy decides which address counts', () => {
  it('without trust proxy, a forged X-Forwarded-For is ignored: the socket address (loopback) is off-network', async () => {
    const gw = createTestGateway({}, { trustProxy: false });
    expectDenied(await authorize(gw.app, {}, { ip: ALICE_IP }));
  });

  describe('the source-port header is believed only from a trusted hop', () => {
    // Loopback (supertest's peer) is on the mobile network here, shared by two subscribers by port range.
    const shared = {
      subscribers: [
        { id: 'sub-lo-a', addresses: ['127.0.0.1:1024-2047'] },
        { id: 'sub-lo-b', addresses: ['127.0.0.1:2048-4095'] },
      ],
      network: { mobileRanges: ['127.0.0.0/8', ...MOBILE_RANGES], portHeader: PORT_HEADER },
    };
    const direct = (gw: TestGateway, port: string) =>
      request(gw.app).get(`/apigateway/authorize?${authorizeQuery()}`).set(PORT_HEADER, port);

    it('a device reaching the gateway directly (trust proxy off) cannot pick its port: it is ignored, and the shared address names nobody', async () => {
      const gw = createTestGateway(shared, { trustProxy: false });
      expectDenied(await direct(gw, '3000'));
      expectDenied(await direct(gw, '1500'));
    });

    it('a peer trust proxy does not cover (trust proxy names another hop) is not believed', async () => {
      const gw = createTestGateway(shared, { trustProxy: '192.0.2.1' });
      expectDenied(await direct(gw, '3000'));
    });

    it('from a trusted hop the header picks the subscriber', async () => {
      const gw = createTestGateway(shared, { trustProxy: 'loopback' });
      expect(callback(await direct(gw, '3000')).code).toBeDefined();
      expectDenied(await direct(gw, '9000'));
    });
  });

  it('only the trusted hops are skipped: an address the client prepends does not count', async () => {
    const gw = createTestGateway();
    // The device (198.51.100.7, off-network) claims to be Alice; the edge appends what it saw.
    expectDenied(await authorize(gw.app, {}, { ip: `${ALICE_IP}, 198.51.100.7` }));
    expect(await subscriberOf(gw, {}, { ip: `198.51.100.7, ${ALICE_IP}` })).toBe('sub-alice');
  });

  describe('a listening server reached directly on 127.0.0.1, with 127.0.0.0/8 as a mobile range', () => {
    let server: Server | undefined;
    afterEach(async () => {
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      server = undefined;
    });

    it('identifies the subscriber from the socket address', async () => {
      const gw = createTestGateway(
        {
          subscribers: [{ id: 'sub-local', phoneNumber: '+34600000009', addresses: ['127.0.0.1'] }],
          network: { mobileRanges: ['127.0.0.0/8'] },
        },
        { trustProxy: false },
      );
      server = gw.app.listen(0, '127.0.0.1');
      await new Promise((resolve) => server!.once('listening', resolve));
      const { port } = server.address() as AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/apigateway/authorize?${authorizeQuery()}`, {
        redirect: 'manual',
      });
      expect(res.status).toBe(302);
      const url = new URL(res.headers.get('location')!);
      expect(url.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{43}$/);
    });

    it('an address outside the configured ranges is refused', async () => {
      const gw = createTestGateway(
        { subscribers: [{ id: 'sub-local', addresses: ['127.0.0.1'] }], network: { mobileRanges: ['10.0.0.0/8'] } },
        { trustProxy: false },
      );
      server = gw.app.listen(0, '127.0.0.1');
      await new Promise((resolve) => server!.once('listening', resolve));
      const { port } = server.address() as AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/apigateway/authorize?${authorizeQuery()}`, {
        redirect: 'manual',
      });
      expect(new URL(res.headers.get('location')!).searchParams.get('error')).toBe('access_denied');
    });
  });
});

describe('login_hint must name the network-identified subscriber', () => {
  const gw = createTestGateway();
  const OTHER = 'login_hint names another subscriber than the one on this connection';

  it("the subscriber's own number or address: accepted", async () => {
    expect(await subscriberOf(gw, { login_hint: 'tel:+34600000001' }, { ip: ALICE_IP })).toBe('sub-alice');
    expect(await subscriberOf(gw, { login_hint: `ipport:${ALICE_IP}` }, { ip: ALICE_IP })).toBe('sub-alice');
    expect(await subscriberOf(gw, { login_hint: 'ipport:[2001:db8::1]' }, { ip: ALICE_IP })).toBe('sub-alice');
    expect(await subscriberOf(gw, { login_hint: `ipport:${CGNAT_IP}:1500` }, { ip: CGNAT_IP, port: '1500' })).toBe(
      'sub-alice',
    );
    expect(await subscriberOf(gw, { login_hint: `ipport:${CGNAT_IP}` }, { ip: CGNAT_IP, port: '1500' })).toBe(
      'sub-alice',
    );
  });

  it('another line: access_denied', async () => {
    expectDenied(await authorize(gw.app, { login_hint: 'tel:+34600000002' }, { ip: ALICE_IP }), OTHER);
    expectDenied(await authorize(gw.app, { login_hint: `ipport:${BOB_IP}` }, { ip: ALICE_IP }), OTHER);
    expectDenied(
      await authorize(gw.app, { login_hint: `ipport:${CGNAT_IP}:3000` }, { ip: CGNAT_IP, port: '1500' }),
      OTHER,
    );
  });

  it('a number nobody has: access_denied', async () => {
    expectDenied(await authorize(gw.app, { login_hint: 'tel:+34699999999' }, { ip: ALICE_IP }), OTHER);
  });

  it('a well-formed hint of a type not served: access_denied', async () => {
    const q = callback(await authorize(gw.app, { login_hint: 'operatortoken:abc' }, { ip: ALICE_IP }));
    expect(q.error).toBe('access_denied');
  });

  it.each([
    'msisdn:34600000002',
    'alice@example.com',
    'tel:600000001',
    'tel:+34 600 000 001',
    'ipport:2001:db8::1',
    'ipport:10.20.0.1:0',
    '+34600000001',
  ])('one the server cannot use (%s: unknown type, malformed) is ignored', async (login_hint) => {
    expect(await subscriberOf(gw, { login_hint }, { ip: ALICE_IP })).toBe('sub-alice');
  });

  it('a hint does not replace network identification: off the network it is still access_denied', async () => {
    expectDenied(await authorize(gw.app, { login_hint: 'tel:+34600000001' }, { ip: '198.51.100.7' }));
  });
});

describe('no network configured (and not in sandbox mode)', () => {
  it('nobody is identified: access_denied', async () => {
    const gw = createTestGateway({ network: undefined });
    expectDenied(await authorize(gw.app, {}, { ip: ALICE_IP }));
  });
});

describe('sandbox mode: the login_hint names an allow-listed line, the network is not used', () => {
  const gw = createTestGateway({ sandbox: { allowList: ['tel:+34600000001', '+34600000077'] }, network: undefined });

  it('an allow-listed line, from any address: the code', async () => {
    expect(await subscriberOf(gw, { login_hint: 'tel:+34600000001' }, { ip: '198.51.100.7' })).toBe('sub-alice');
  });

  it('a line not on the allow-list: access_denied', async () => {
    const q = callback(await authorize(gw.app, { login_hint: 'tel:+34600000002' }, { ip: BOB_IP }));
    expect(q).toMatchObject({
      error: 'access_denied',
      error_description: 'the line is not on the sandbox allow-list',
      state: 'state-123',
      iss: ISSUER,
    });
  });

  it('no login_hint, or an ipport hint: access_denied', async () => {
    expect(callback(await authorize(gw.app, {}, { ip: ALICE_IP })).error).toBe('access_denied');
    expect(callback(await authorize(gw.app, { login_hint: `ipport:${ALICE_IP}` }, { ip: ALICE_IP })).error).toBe(
      'access_denied',
    );
  });

  it('an allow-listed line the directory does not know: access_denied', async () => {
    expect(callback(await authorize(gw.app, { login_hint: 'tel:+34600000077' })).error).toBe('access_denied');
  });

  it('a malformed hint is still invalid_request', async () => {
    expect(callback(await authorize(gw.app, { login_hint: 'tel:34600000001' })).error).toBe('invalid_request');
  });
});

describe('NetworkIdentifier', () => {
  const directory = new StaticSubscriberDirectory(SUBSCRIBERS);
  /** A request through a proxy the app trusts (a `trust proxy fn` that trusts the peer), or from an untrusted peer. */
  const fakeReq = (ip: string | undefined, headers: Record<string, string | string[]> = {}, trusted = true) =>
    ({
      ip,
      headers,
      socket: { remoteAddress: '192.0.2.254' },
      app: { get: () => (address: string, hop: number) => trusted && address === '192.0.2.254' && hop === 0 },
    }) as unknown as Request;

  it('refuses ranges that are not CIDR and header names that are not tokens', () => {
    expect(() => new NetworkIdentifier({ mobileRanges: ['10.0.0.0'] })).toThrow(TypeError);
    expect(() => new NetworkIdentifier({ mobileRanges: ['10.0.0.0/33'] })).toThrow(TypeError);
    expect(() => new NetworkIdentifier({ mobileRanges: ['banana/8'] })).toThrow(TypeError);
    expect(() => new NetworkIdentifier({ mobileRanges: [], portHeader: 'bad header' })).toThrow(TypeError);
  });

  it('matches IPv4 and IPv6 ranges by kind; an IPv4-mapped range is its IPv4 range', () => {
    const network = new NetworkIdentifier({ mobileRanges: ['10.20.0.0/16', '2001:db8::/32', '::ffff:100.64.0.0/106'] });
    expect(network.isMobile('10.20.255.1')).toBe(true);
    expect(network.isMobile('10.21.0.1')).toBe(false);
    expect(network.isMobile('2001:db8:1::5')).toBe(true);
    expect(network.isMobile('2001:db9::5')).toBe(false);
    expect(network.isMobile('100.64.3.4')).toBe(true);
    expect(network.isMobile('not an ip')).toBe(false);
  });

  it('reads the port header only when configured', async () => {
    const withPort = new NetworkIdentifier({ mobileRanges: ['100.64.0.0/10'], portHeader: 'X-Source-Port' });
    const without = new NetworkIdentifier({ mobileRanges: ['100.64.0.0/10'] });
    const req = fakeReq(CGNAT_IP, { 'x-source-port': '1500' });
    expect(withPort.deviceAddress(req)).toEqual({ ip: CGNAT_IP, port: 1500 });
    expect(without.deviceAddress(req)).toEqual({ ip: CGNAT_IP });
    expect(await withPort.identify(req, directory)).toMatchObject({
      identified: true,
      subscriber: { id: 'sub-alice' },
    });
    expect(await without.identify(req, directory)).toEqual({ identified: false, reason: 'unknown-address' });
  });

  it('believes the port header only from a peer trust proxy trusts', async () => {
    const network = new NetworkIdentifier({ mobileRanges: ['100.64.0.0/10'], portHeader: 'x-source-port' });
    expect(network.deviceAddress(fakeReq(CGNAT_IP, { 'x-source-port': '3000' }, false))).toEqual({ ip: CGNAT_IP });
    expect(network.deviceAddress(fakeReq(CGNAT_IP, { 'x-source-port': 'x' }, false))).toEqual({ ip: CGNAT_IP });
    // A request object outside an Express app (no trust proxy function) is not believed either.
    expect(network.deviceAddress({ ip: CGNAT_IP, headers: { 'x-source-port': '3000' } } as unknown as Request)).toEqual(
      { ip: CGNAT_IP },
    );
  });

  it('warns once when trust proxy trusts any peer (true or a hop count): the port header believed from anyone', async () => {
    for (const [setting, warned] of [
      [true, 1],
      [1, 1],
      [['10.0.0.10'], 0],
      [false, 0],
    ] as const) {
      const warnings: string[] = [];
      const options = { mobileRanges: ['100.64.0.0/10'], portHeader: 'x-source-port' };
      const network = new NetworkIdentifier(options, (_option, m) => warnings.push(m));
      const app = express();
      app.set('trust proxy', setting);
      app.get('/', (req, res) => void res.json(network.deviceAddress(req)));
      await request(app).get('/');
      await request(app).get('/');
      expect(warnings, String(setting)).toHaveLength(warned);
      if (warned) expect(warnings[0]).toContain('network.portHeader is believed from any connection');
    }
  });

  it('says why a device was not identified', async () => {
    const network = new NetworkIdentifier({ mobileRanges: ['10.20.0.0/16'], portHeader: 'x-source-port' });
    expect(await network.identify(fakeReq(undefined), directory)).toEqual({ identified: false, reason: 'no-address' });
    expect(await network.identify(fakeReq('198.51.100.7'), directory)).toEqual({
      identified: false,
      reason: 'off-network',
    });
    expect(await network.identify(fakeReq(ALICE_IP, { 'x-source-port': 'x' }), directory)).toEqual({
      identified: false,
      reason: 'bad-port',
    });
    expect(await network.identify(fakeReq('10.20.9.9'), directory)).toEqual({
      identified: false,
      reason: 'unknown-address',
    });
  });
});
