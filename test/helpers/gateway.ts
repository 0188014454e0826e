import express, { type Express } from 'express';
import {
  createNetAuth,
  type NetAuth,
  type NetAuthOptions,
  type RegisteredClient,
  type StaticSubscriber,
  type ConsentRule,
} from '../../lib/index.js';

export const ISSUER = 'http://gateway.test/apigateway';

export const SECRET = 'very-secret_value.with~odd:chars+and spaces%';

/** Clients as a developer portal would register them. The secret has every character openid-client percent-encodes. */
export const CLIENTS: RegisteredClient[] = [
  {
    clientId: 'app-1',
    name: 'Fraud Checker',
    clientSecret: SECRET,
    redirectUris: ['https://app.example/callback'],
    grantTypes: ['urn:openid:params:grant-type:ciba', 'authorization_code'],
    scopes: [
      'dpv:FraudPreventionAndDetection#sim-swap',
      'dpv:FraudPreventionAndDetection#device-location',
      'dpv:RequestedServiceProvision#number-verification',
      'dpv:Marketing#device-location',
    ],
  },
  {
    clientId: 'app-2',
    clientSecret: 'other-secret',
    redirectUris: ['https://two.example/cb'],
    grantTypes: ['urn:openid:params:grant-type:ciba'],
    scopes: ['dpv:FraudPreventionAndDetection#sim-swap'],
  },
  {
    clientId: 'code-only',
    clientSecret: 'code-secret',
    redirectUris: ['https://three.example/cb'],
    grantTypes: ['authorization_code'],
    scopes: ['dpv:FraudPreventionAndDetection#sim-swap'],
  },
];

export const SUBSCRIBERS: StaticSubscriber[] = [
  { id: 'sub-alice', phoneNumber: '+34600000001', addresses: ['10.20.0.1', '2001:db8::1', '100.64.0.1:1024-2047'] },
  { id: 'sub-bob', phoneNumber: '+34600000002', addresses: ['10.20.0.2', '100.64.0.1:2048-4095'] },
];

export const POLICY: ConsentRule[] = [
  { purpose: 'FraudPreventionAndDetection', scope: 'sim-swap', basis: 'legitimate-interest' },
  { purpose: 'FraudPreventionAndDetection', scope: 'device-location', basis: 'consent' },
  { purpose: 'RequestedServiceProvision', scope: 'number-verification', basis: 'legitimate-interest' },
  { purpose: 'Marketing', scope: 'device-location', basis: 'forbidden' },
];

/** The operator's mobile ranges in the fixture: the subscribers' addresses above lie in them. */
export const MOBILE_RANGES = ['10.20.0.0/16', '100.64.0.0/10', '2001:db8::/32'];

/** The edge's CGNAT source-port header in the fixture. */
export const PORT_HEADER = 'x-source-port';

export interface TestGatewaySetup {
  /**
   * Express `trust proxy`. Default `loopback`: supertest connects from loopback, so a test plays the
   * operator's edge by sending `X-Forwarded-For: <device address>`.
   */
  trustProxy?: boolean | string | number;
}

export interface TestGateway {
  app: Express;
  netauth: NetAuth;
  clock: { now: number; advance(seconds: number): void };
}

/**
 * The real router mounted in a real Express app, plus a sample service API behind the guard.
 * The clock is injected so expiry and polling intervals are tested without waiting.
 */
export function createTestGateway(overrides: Partial<NetAuthOptions> = {}, setup: TestGatewaySetup = {}): TestGateway {
  const clock = {
    now: 1_800_000_000_000,
    advance(seconds: number) {
      clock.now += seconds * 1000;
    },
  };
  const netauth = createNetAuth({
    issuer: ISSUER,
    clients: CLIENTS,
    subscribers: SUBSCRIBERS,
    consentPolicy: POLICY,
    network: { mobileRanges: MOBILE_RANGES, portHeader: PORT_HEADER },
    // As production has one (without it the gateway warns at start-up); a test about the default passes undefined.
    pairwiseSalt: 'test-gateway-salt',
    now: () => clock.now,
    ...overrides,
  });
  const app = express();
  app.set('trust proxy', setup.trustProxy ?? 'loopback');
  app.use('/apigateway', netauth.router);
  app.post('/sim-swap/check', netauth.guard({ scope: 'sim-swap' }), (req, res) => {
    res.json({
      swapped: false,
      subscriber: req.netauth?.subscriber.id,
      clientId: req.netauth?.clientId,
      purpose: req.netauth?.purpose,
    });
  });
  app.get('/location', netauth.guard({ scope: 'device-location' }), (req, res) => {
    res.json({ subscriber: req.netauth?.subscriber.id });
  });
  return { app, netauth, clock };
}

/** HTTP Basic exactly as RFC 6749 §2.3.1 (and openid-client) encodes it. */
export function basic(clientId: string, secret: string): string {
  const encode = (v: string) =>
    encodeURIComponent(v)
      .replace(/%20/g, '+')
      .replace(/[-_.!~*'()]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(secret)}`).toString('base64')}`;
}

export const APP1 = basic('app-1', SECRET);
export const APP2 = basic('app-2', 'other-secret');

export const SIM_SWAP = 'dpv:FraudPreventionAndDetection#sim-swap';
export const LOCATION = 'dpv:FraudPreventionAndDetection#device-location';
export const CIBA = 'urn:openid:params:grant-type:ciba';
