import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_CONFIG, formatPath, loadConfig, resolveConfig } from '../../demo-app/config.js';

const dir = mkdtempSync(join(tmpdir(), 'netauth-demo-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes `content` (an object as JSON, or raw text) to demo.json in a temp dir and loads it. */
function load(content: unknown): string {
  const file = join(dir, 'demo.json');
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  try {
    loadConfig(file);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message.replace(file, 'demo.json');
  }
  return 'ok';
}

const alice = DEFAULT_CONFIG.subscribers[0]!;
const client = DEFAULT_CONFIG.clients[0]!;
/** A second, backend-only client with a secret. */
const other = {
  clientId: 'fraud-checker',
  clientSecret: 'fraud-checker-secret',
  grantTypes: ['urn:openid:params:grant-type:ciba'],
  scopes: client.scopes,
};

describe('demo config', () => {
  it('the embedded defaults and the shipped example are valid', () => {
    expect(resolveConfig({})).toEqual(DEFAULT_CONFIG);
    const example = loadConfig(join(process.cwd(), 'demo-app', 'demo.example.json'));
    expect(example.operator.name).toBe('Example Telecom');
    expect(example.subscribers).toHaveLength(4);
  });

  it('merges sections field by field and replaces lists whole', () => {
    const config = resolveConfig({ ports: { app: 0 }, operator: { name: 'Other' }, subscribers: [alice] });
    expect(config.ports).toEqual({ gateway: 3000, app: 0 });
    expect(config.operator).toEqual({ ...DEFAULT_CONFIG.operator, name: 'Other' });
    expect(config.subscribers).toEqual([alice]);
  });

  it.each([
    [
      { subscribers: [alice, { id: 'b', phoneNumber: '600000002' }] },
      'subscribers[1].phoneNumber: must be +<E.164>, e.g. +34600000001',
    ],
    [{ operator: { colour: 'red' } }, 'operator.colour: unknown key'],
    [{ extra: true }, 'extra: unknown key'],
    [{ subscribers: [{ ...alice, pin: '1234' }] }, 'subscribers[0].pin: unknown key'],
    [{ ports: { app: '3001' } }, 'ports.app: must be a number, not string'],
    [{ ports: { gateway: 70000 } }, 'ports.gateway: must be 0..65535 (0: any free port)'],
    [{ ports: { gateway: 4000, app: 4000 } }, 'ports.app: must differ from ports.gateway'],
    [{ subscribers: [{ id: 'x' }] }, 'subscribers[0].phoneNumber: is required'],
    [
      { subscribers: [alice, { ...alice, id: 'sub-x', addresses: [] }] },
      'subscribers[1].phoneNumber: +34600000001 is already the line of subscribers[0]',
    ],
    [
      { subscribers: [{ ...alice, addresses: ['127.0.0.1', '10.1.2.3'] }] },
      'subscribers[0].addresses[1]: 10.1.2.3 is outside network.mobileRanges',
    ],
    [
      { subscribers: [{ ...alice, addresses: ['not-an-ip'] }] },
      'subscribers[0].addresses[0]: must be an IPv4 or IPv6 address',
    ],
    [
      { network: { mobileRanges: ['127.0.0.0/33'] } },
      'network.mobileRanges[0]: must be a CIDR range such as 127.0.0.0/8',
    ],
    [
      { network: { wifiAddress: '127.0.0.9' } },
      'network.wifiAddress: must lie outside network.mobileRanges (it plays a WiFi network)',
    ],
    [
      { operator: { primaryColor: 'url(evil)' } },
      'operator.primaryColor: must be a CSS colour: #rrggbb, rgb(...), hsl(...) or a name',
    ],
    [
      { consentPolicy: [{ purpose: 'X', scope: 'y', basis: 'maybe' }] },
      'consentPolicy[0].basis: must be "consent", "legitimate-interest" or "forbidden"',
    ],
    [
      { consentPolicy: [DEFAULT_CONFIG.consentPolicy[0]] },
      'clients[0].scopes[1]: dpv:FraudPreventionAndDetection#sim-swap has no rule in consentPolicy',
    ],
    [
      { clients: [{ ...client, grantTypes: ['implicit'] }] },
      'clients[0].grantTypes[0]: must be "authorization_code" or "urn:openid:params:grant-type:ciba"',
    ],
    [
      { clients: [{ ...client, grantTypes: ['authorization_code'] }] },
      'app.clientId: client "demo-app" needs the grant type urn:openid:params:grant-type:ciba (the app runs both flows)',
    ],
    [{ app: { clientId: 'nobody' } }, 'app.clientId: no client "nobody" in clients'],
    [
      { clients: [{ ...client, clientSecret: 'a-secret-123' }] },
      'clients[0].clientSecret: a private_key_jwt client has no secret (it authenticates with its key): remove it',
    ],
    [
      { clients: [client, { ...other, clientSecret: undefined }] },
      `clients[1].clientSecret: is required (or "tokenEndpointAuthMethod": "private_key_jwt" for the sample app's client)`,
    ],
    [
      { clients: [client, { ...other, clientSecret: undefined, tokenEndpointAuthMethod: 'private_key_jwt' }] },
      "clients[1].tokenEndpointAuthMethod: private_key_jwt is for the sample app's client (app.clientId): the app generates its key at start",
    ],
    [
      { profile: 'none', clients: [client, { ...other, grantTypes: ['authorization_code'] }] },
      'clients[1].redirectUris: needs at least one URI for the grant type authorization_code',
    ],
    [
      { clients: [client, other] },
      'clients[1].tokenEndpointAuthMethod: profile "camara" (the default) requires private_key_jwt, which only ' +
        "the sample app's client has here (its key is made at start): remove the secret client, " +
        'or set "profile": "none"',
    ],
    [{ profile: 'fapi' }, 'profile: must be "camara" (the CAMARA profile, the default) or "none"'],
    [{ lifetimes: { authReqId: 2 } }, 'lifetimes.pollInterval: must be shorter than lifetimes.authReqId (2)'],
    [{ sandbox: { allowList: ['+1'] } }, 'sandbox.allowList[0]: must be +<E.164> or tel:+<E.164>'],
    [{ lifetimes: { pollInterval: 0.5 } }, 'lifetimes.pollInterval: must be a whole number of seconds'],
    [{ host: '0.0.0.0' }, 'host: must be "localhost" or a 127.x.y.z address (the demo serves loopback only)'],
    [[], 'must be a JSON object'],
  ])('names the field: %j', (content, message) => {
    const got = load(content);
    // One line: "demo config <file>: <field>: <problem>", no stack trace.
    expect(got).toBe(`demo config demo.json: ${message}`);
    expect(got).not.toContain('\n');
  });

  it('reports unreadable and malformed files in one line', () => {
    expect(load('{"ports": {')).toMatch(/^demo config demo\.json: not valid JSON \(.+\)$/);
    expect(() => loadConfig(join(dir, 'missing.json'))).toThrow(
      /^demo config .*missing\.json: cannot read the file \(no such file\)$/,
    );
  });

  it('formats paths like the config file reads', () => {
    expect(formatPath(['subscribers', 1, 'addresses', 0])).toBe('subscribers[1].addresses[0]');
    expect(formatPath([])).toBe('(top level)');
  });
});
