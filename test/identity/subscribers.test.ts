import { describe, expect, it } from 'vitest';
import { StaticSubscriberDirectory } from '../../lib/index.js';
import { APP1, SIM_SWAP, SUBSCRIBERS, createTestGateway } from '../helpers/gateway.js';
import { authorize, callback } from '../helpers/frontend.js';
import { bcAuthorize } from '../helpers/requests.js';

/** The static directory: which entries name a subscriber, with and without the device's source port. */

const CAROL = { id: 'sub-carol', phoneNumber: '+34600000003', addresses: ['100.64.0.5:1024-2047'] };
const DAVE = { id: 'sub-dave', addresses: ['100.64.0.9', '100.64.0.9:1024-2047'] };
const ERIN = { id: 'sub-erin', addresses: ['100.64.0.11'] };
const FRANK = { id: 'sub-frank', addresses: ['100.64.0.11:3000-3999'] };

describe('StaticSubscriberDirectory', () => {
  const directory = new StaticSubscriberDirectory([CAROL, DAVE, ERIN, FRANK]);
  const find = async (ip: string, port?: number) =>
    (await directory.findByNetworkAddress(port === undefined ? { ip } : { ip, port }))?.id;

  it('a port-restricted entry names its subscriber only when the port is known and in range', async () => {
    expect(await find('100.64.0.5', 1500)).toBe('sub-carol');
    expect(await find('100.64.0.5', 3000)).toBeUndefined();
    expect(await find('100.64.0.5')).toBeUndefined();
  });

  it('without a port, an entry for every port names its subscriber; an address shared with anyone else names nobody', async () => {
    expect(await find('100.64.0.9')).toBe('sub-dave');
    expect(await find('100.64.0.9', 5000)).toBe('sub-dave');
    expect(await find('100.64.0.11')).toBeUndefined();
    expect(await find('100.64.0.11', 3500)).toBe('sub-erin'); // the first entry covering the port, as registered
  });

  it('the fixture: a CGNAT address shared by two subscribers by port range', async () => {
    const fixture = new StaticSubscriberDirectory(SUBSCRIBERS);
    expect((await fixture.findByNetworkAddress({ ip: '100.64.0.1', port: 1500 }))?.id).toBe('sub-alice');
    expect((await fixture.findByNetworkAddress({ ip: '100.64.0.1', port: 3000 }))?.id).toBe('sub-bob');
    expect(await fixture.findByNetworkAddress({ ip: '100.64.0.1' })).toBeUndefined();
  });
});

describe('a subscriber registered only with a port range', () => {
  const gw = createTestGateway({ subscribers: [...SUBSCRIBERS, CAROL] });

  it('bc-authorize with an ipport hint without the port: unknown_user_id; with the port: accepted', async () => {
    const bare = await bcAuthorize(gw.app, { login_hint: 'ipport:100.64.0.5', scope: SIM_SWAP }, APP1);
    expect(bare.status).toBe(400);
    expect(bare.body.error).toBe('unknown_user_id');
    expect((await bcAuthorize(gw.app, { login_hint: 'ipport:100.64.0.5:1500', scope: SIM_SWAP }, APP1)).status).toBe(
      200,
    );
  });

  it('GET /authorize from the address with no port header: access_denied; with the port: a code', async () => {
    expect(callback(await authorize(gw.app, {}, { ip: '100.64.0.5' })).error).toBe('access_denied');
    expect(callback(await authorize(gw.app, {}, { ip: '100.64.0.5', port: '1500' })).code).toBeDefined();
  });
});
