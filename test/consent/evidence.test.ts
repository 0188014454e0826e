/**
 * Issue 43, consent records that demonstrate consent: every way a consent is given (the consent page, with and
 * without the operator-channel code, out of band, an outside Consent Master) leaves its evidence in the record,
 * `netauth.consent.export()` answers it with the withdrawals, and the consents page says when and how. Driven over
 * HTTP through the real router where the consent is given over HTTP.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import type { ConsentExport, NetAuthOptions } from '../../lib/index.js';
import { POLICY, createTestGateway, type TestGateway } from '../helpers/gateway.js';
import {
  ALICE_IP,
  CALLBACK,
  LOCATION,
  authorize,
  callback,
  consentForm,
  cookies,
  formTarget,
  fromDevice,
  localPath,
  location,
  redeem,
} from '../helpers/frontend.js';
import { operatorChannel } from '../helpers/operator-channel.js';
import { skipRedisTests, useRedisStore } from '../helpers/redis-server.js';
import { startConsentMaster, type ConsentMasterFake } from './consent-master-fake.js';
import { HttpConsentMaster } from './http-consent-master.js';

const PAGE = '/apigateway/consents';
const CONFIRMED_POLICY = POLICY.map((rule) =>
  rule.basis === 'consent' ? { ...rule, confirmation: 'required' as const } : rule,
);

/** The notice as a reader of the page the browser got computes it: the text of its <main>, hashed. */
function noticeDigest(html: string): string {
  const main = /<main>([\s\S]*)<\/main>/.exec(html)![1]!;
  const text = main
    .replace(/<[^>]*>/g, ' ')
    .replace(/&#([0-9]+);/g, (_, c: string) => String.fromCodePoint(Number(c)))
    .replace(/\s+/g, ' ')
    .trim();
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** GET /authorize for device-location from Alice's phone, then the consent page as the browser shows it. */
async function openConsentPage(gw: TestGateway) {
  const start = await authorize(gw.app, { scope: LOCATION });
  expect(start.status).toBe(302);
  const cookie = cookies(start);
  const pagePath = localPath(location(start));
  const page = await request(gw.app).get(pagePath).set('Cookie', cookie);
  expect(page.status).toBe(200);
  const form = consentForm(page.text);
  const submit = (fields: Record<string, string>) =>
    fromDevice(request(gw.app).post(formTarget(pagePath, form.action)))
      .set('Cookie', cookie)
      .type('form')
      .send({ interaction: form.interaction, csrf: form.csrf, ...fields });
  return { page, submit };
}

/** The Withdraw forms' (or the code form's) hidden fields on the consents page. */
function forms(html: string): Record<string, string>[] {
  return [...html.matchAll(/<form method="post" action="consents"[^>]*>([\s\S]*?)<\/form>/g)].map((m) =>
    Object.fromEntries(
      [...m[1]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((f) => [f[1]!, f[2]!]),
    ),
  );
}

function consentsPage(gw: TestGateway, cookie?: string) {
  const req = request(gw.app).get(PAGE).set('X-Forwarded-For', ALICE_IP);
  return cookie === undefined ? req : req.set('Cookie', cookie);
}

function postConsents(gw: TestGateway, cookie: string | undefined, fields: Record<string, string>) {
  const req = request(gw.app)
    .post(formTarget(PAGE, 'consents'))
    .set('X-Forwarded-For', ALICE_IP)
    .type('form')
    .send(fields);
  return cookie === undefined ? req : req.set('Cookie', cookie);
}

/** The one record of (app-1, device-location) in an export, by status. */
function recordOf(exported: ConsentExport, status: string) {
  const found = exported.records.filter((r) => r.client.id === 'app-1' && r.status === status);
  expect(found).toHaveLength(1);
  return found[0]!;
}

describe('consent given on the consent page, without confirmation', () => {
  it('the record holds the page, the notice shown, how the subscriber was identified; export and the consents page say so', async () => {
    const gw = createTestGateway({ consentPage: { noticeVersion: 'notice-2026-11' } });
    const { page, submit } = await openConsentPage(gw);
    const answer = await submit({ decision: 'allow' });
    expect(answer.status).toBe(303);
    expect((await redeem(gw.app, { code: callback(answer).code!, redirect_uri: CALLBACK })).status).toBe(200);

    const exported = await gw.netauth.consent.export('sub-alice');
    // What a subscriber or a regulator reads: JSON, times in ISO 8601, the application's name.
    expect(JSON.parse(JSON.stringify(exported))).toEqual(exported);
    expect(exported).toMatchObject({
      issuer: 'http://gateway.test/apigateway',
      subscriberId: 'sub-alice',
      exportedAt: new Date(gw.clock.now).toISOString(),
    });
    expect(recordOf(exported, 'granted')).toEqual({
      client: { id: 'app-1', name: 'Fraud Checker' },
      purpose: 'dpv:FraudPreventionAndDetection',
      scope: 'device-location',
      status: 'granted',
      decidedAt: new Date(gw.clock.now).toISOString(),
      expiresAt: expect.any(String),
      evidence: {
        method: 'page',
        notice: { sha256: noticeDigest(page.text), version: 'notice-2026-11' },
        identifiedBy: 'network',
      },
    });
    // Never the address or the number.
    expect(JSON.stringify(exported)).not.toMatch(/10\.20\.0\.1|34600000001/);

    const list = await consentsPage(gw);
    expect(list.status).toBe(200);
    expect(list.text).toMatch(/<p>Given on <time [^>]*>[^<]+<\/time> on the consent page<\/p>/);
  });

  it('the notice digest is of the text shown: other wording, another digest', async () => {
    const digestWith = async (options: Partial<NetAuthOptions>) => {
      const gw = createTestGateway(options);
      const { submit } = await openConsentPage(gw);
      expect((await submit({ decision: 'allow' })).status).toBe(303);
      return recordOf(await gw.netauth.consent.export('sub-alice'), 'granted').evidence!.notice!.sha256;
    };
    const plain = await digestWith({});
    expect(await digestWith({})).toBe(plain);
    expect(await digestWith({ consentPage: { texts: { footer: 'Withdraw whenever you like.' } } })).not.toBe(plain);
  });

  it('a refusal on the page is recorded with its evidence too', async () => {
    const gw = createTestGateway();
    const { page, submit } = await openConsentPage(gw);
    expect((await submit({ decision: 'deny' })).status).toBe(303);
    expect(recordOf(await gw.netauth.consent.export('sub-alice'), 'denied').evidence).toEqual({
      method: 'page',
      notice: { sha256: noticeDigest(page.text), version: '1' },
      identifiedBy: 'network',
    });
  });

  it('consentPage.noticeVersion is checked at start-up', () => {
    expect(() => createTestGateway({ consentPage: { noticeVersion: 'two words' } })).toThrow(
      'consentPage.noticeVersion must be 1 to 64 printable ASCII characters without spaces',
    );
  });
});

describe('consent given on the consent page, confirmed through the operator channel', () => {
  it.each([
    { configured: 'sms' as const, channel: 'sms', shown: 'SMS' },
    { configured: undefined, channel: 'operator', shown: 'Your mobile operator' },
  ])(
    'the record says page_confirmed, by a one-time code over the channel ($configured); the consents page says so',
    async ({ configured, channel, shown }) => {
      const sms = operatorChannel();
      const gw = createTestGateway({
        consentPolicy: CONFIRMED_POLICY,
        sendConsentConfirmation: sms.send,
        ...(configured !== undefined ? { consentConfirmation: { channel: configured } } : {}),
      });
      const { page, submit } = await openConsentPage(gw);
      expect((await submit({ decision: 'allow' })).status).toBe(303);
      const done = await submit({ decision: 'allow', code: sms.last() });
      expect(done.status).toBe(303);
      expect(callback(done).code).toBeDefined();

      expect(recordOf(await gw.netauth.consent.export('sub-alice'), 'granted').evidence).toEqual({
        method: 'page_confirmed',
        notice: { sha256: noticeDigest(page.text), version: '1' },
        identifiedBy: 'network',
        confirmation: { method: 'one_time_code', channel },
      });

      // The consents page, behind its own code.
      const offer = await consentsPage(gw);
      const cookie = cookies(offer);
      expect((await postConsents(gw, cookie, { csrf: forms(offer.text)[0]!.csrf!, send: 'code' })).status).toBe(303);
      const ask = await consentsPage(gw, cookie);
      const opened = await postConsents(gw, cookie, { csrf: forms(ask.text)[0]!.csrf!, code: sms.last() });
      expect(opened.status).toBe(303);
      const list = await consentsPage(gw, cookies(opened));
      expect(list.text).toMatch(
        new RegExp(
          `<p>Given on <time [^>]*>[^<]+</time> on the consent page, confirmed with a code sent by ${shown}</p>`,
        ),
      );
    },
  );

  it('consentConfirmation.channel must be one of the known channels', () => {
    const sms = operatorChannel();
    expect(() =>
      createTestGateway({ sendConsentConfirmation: sms.send, consentConfirmation: { channel: 'fax' as never } }),
    ).toThrow("consentConfirmation.channel must be 'sms', 'push', 'ussd' or 'operator', not \"fax\"");
  });
});

describe('consent given out of band (netauth.consent.grant) and withdrawn through the API', () => {
  const notice = { sha256: 'c'.repeat(64), version: 'app-3.2' };

  it('the record holds out_of_band and what the operator says it showed; a revoke keeps it as withdrawn, by whom', async () => {
    const gw = createTestGateway();
    await gw.netauth.consent.grant({
      clientId: 'app-1',
      subscriberId: 'sub-alice',
      scope: LOCATION,
      evidence: { notice, identifiedBy: 'operatortoken' },
    });
    const given = recordOf(await gw.netauth.consent.export('sub-alice'), 'granted');
    expect(given.evidence).toEqual({ method: 'out_of_band', notice, identifiedBy: 'operatortoken' });

    gw.clock.advance(3600);
    expect(
      await gw.netauth.consent.revoke({
        clientId: 'app-1',
        subscriberId: 'sub-alice',
        scope: LOCATION,
        withdrawnBy: 'client',
        reason: 'account_closed',
      }),
    ).toBe(true);
    const after = await gw.netauth.consent.export('sub-alice');
    expect(after.records).toHaveLength(1);
    expect(after.records[0]).toEqual({
      ...given,
      status: 'withdrawn',
      withdrawal: { at: new Date(gw.clock.now).toISOString(), by: 'client', via: 'api', reason: 'account_closed' },
    });
    expect(await gw.netauth.consent.list({ subscriberId: 'sub-alice' })).toEqual([]);
  });

  it('a refusal that replaces a consent keeps the consent as withdrawn by the subscriber, its evidence with it', async () => {
    const gw = createTestGateway();
    const { submit } = await openConsentPage(gw);
    expect((await submit({ decision: 'allow' })).status).toBe(303);
    const given = recordOf(await gw.netauth.consent.export('sub-alice'), 'granted');
    gw.clock.advance(60);
    await gw.netauth.consent.deny({ clientId: 'app-1', subscriberId: 'sub-alice', scope: LOCATION });
    const after = await gw.netauth.consent.export('sub-alice');
    expect(after.records.map((r) => r.status)).toEqual(['denied', 'withdrawn']);
    expect(after.records[0]!.evidence).toEqual({ method: 'out_of_band' });
    expect(after.records[1]).toEqual({
      ...given,
      status: 'withdrawn',
      withdrawal: { at: new Date(gw.clock.now).toISOString(), by: 'subscriber', via: 'api' },
    });
  });

  it('without evidence: out_of_band alone; a withdrawal by default the operator', async () => {
    const gw = createTestGateway();
    const input = { clientId: 'app-1', login_hint: 'tel:+34600000001', scope: LOCATION };
    await gw.netauth.consent.grant(input);
    await gw.netauth.consent.revoke(input);
    expect(recordOf(await gw.netauth.consent.export('sub-alice'), 'withdrawn')).toMatchObject({
      evidence: { method: 'out_of_band' },
      withdrawal: { by: 'operator', via: 'api' },
    });
  });

  it('evidence that is not what the record can keep is invalid_request, and nothing is recorded', async () => {
    const gw = createTestGateway();
    const input = { clientId: 'app-1', subscriberId: 'sub-alice', scope: LOCATION };
    await expect(
      gw.netauth.consent.grant({ ...input, evidence: { notice: { sha256: 'not-a-digest', version: '1' } } }),
    ).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(
      gw.netauth.consent.grant({ ...input, evidence: { identifiedBy: '10.20.0.1' as never } }),
    ).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(gw.netauth.consent.revoke({ ...input, withdrawnBy: 'subscriber' as never })).rejects.toMatchObject({
      code: 'invalid_request',
    });
    expect((await gw.netauth.consent.export('sub-alice')).records).toEqual([]);
    await expect(gw.netauth.consent.export('')).rejects.toMatchObject({ code: 'invalid_request' });
  });
});

/** Alice allows on the page, a day later withdraws on the consents page: the export before and after. */
async function giveAndWithdrawOnThePages(gw: TestGateway) {
  const { submit } = await openConsentPage(gw);
  expect((await submit({ decision: 'allow' })).status).toBe(303);
  const given = recordOf(await gw.netauth.consent.export('sub-alice'), 'granted');
  gw.clock.advance(86_400);
  const list = await consentsPage(gw);
  expect((await postConsents(gw, cookies(list), forms(list.text)[0]!)).status).toBe(303);
  expect(await gw.netauth.consent.list({ subscriberId: 'sub-alice' })).toEqual([]);
  return { given, after: await gw.netauth.consent.export('sub-alice') };
}

describe('withdrawn on the consents page', () => {
  it('the export keeps the consent as withdrawn by the subscriber, on the consents page, with its evidence', async () => {
    const gw = createTestGateway();
    const { given, after } = await giveAndWithdrawOnThePages(gw);
    expect(after.records).toEqual([
      {
        ...given,
        status: 'withdrawn',
        withdrawal: { at: new Date(gw.clock.now).toISOString(), by: 'subscriber', via: 'consents_page' },
      },
    ]);
  });

  const skip = skipRedisTests('consent evidence on Redis');
  describe.skipIf(skip)('on a real Redis', () => {
    const redis = useRedisStore();

    it('the same: evidence and withdrawal kept in Redis', async () => {
      const gw = createTestGateway({ store: redis(), consentPage: { cookieSecret: 'a-shared-secret-123' } });
      const { given, after } = await giveAndWithdrawOnThePages(gw);
      expect(given.evidence).toMatchObject({ method: 'page', identifiedBy: 'network' });
      expect(after.records).toEqual([
        {
          ...given,
          status: 'withdrawn',
          withdrawal: { at: new Date(gw.clock.now).toISOString(), by: 'subscriber', via: 'consents_page' },
        },
      ]);
    });
  });
});

describe('consent given through an outside Consent Master', () => {
  const c = { now: 1_800_000_000_000 };
  let master: ConsentMasterFake;
  beforeAll(async () => {
    master = await startConsentMaster(() => c.now);
  });
  afterAll(async () => {
    await master?.close();
  });

  it('a consent the Consent Master recorded on its own exports as registry; its own withdrawal as by the registry', async () => {
    const gw = createTestGateway({
      consentRegistry: new HttpConsentMaster(master.url, master.token),
      now: () => c.now,
    });
    const subject = {
      clientId: 'app-1',
      subscriberId: 'sub-alice',
      purpose: 'FraudPreventionAndDetection',
      scopes: ['device-location'],
    };
    master.record(subject);
    expect(recordOf(await gw.netauth.consent.export('sub-alice'), 'granted').evidence).toEqual({ method: 'registry' });
    const list = await consentsPage(gw);
    expect(list.text).toMatch(/<p>Given on <time [^>]*>[^<]+<\/time> recorded by Your mobile operator<\/p>/);

    c.now += 60_000;
    await gw.netauth.consent.withdrawn(master.withdraw(subject));
    expect(recordOf(await gw.netauth.consent.export('sub-alice'), 'withdrawn')).toMatchObject({
      evidence: { method: 'registry' },
      withdrawal: { at: new Date(c.now).toISOString(), by: 'registry', via: 'registry' },
    });
  });

  it('a consent given on the gateway page travels to it with its evidence', async () => {
    const gw = createTestGateway({
      consentRegistry: new HttpConsentMaster(master.url, master.token),
      now: () => c.now,
    });
    const { page, submit } = await openConsentPage(gw);
    expect((await submit({ decision: 'allow' })).status).toBe(303);
    expect(recordOf(await gw.netauth.consent.export('sub-alice'), 'granted').evidence).toEqual({
      method: 'page',
      notice: { sha256: noticeDigest(page.text), version: '1' },
      identifiedBy: 'network',
    });
  });
});

describe('records written before evidence was kept, and a registry without history', () => {
  it('export has the live records, without evidence; the consents page shows the date alone', async () => {
    const c = { now: 1_800_000_000_000 };
    const master = await startConsentMaster(() => c.now);
    try {
      const adapter = new HttpConsentMaster(master.url, master.token);
      // An adapter of an earlier version: five methods, no evidence passed on, no history.
      const older = {
        grant: (s: Parameters<typeof adapter.grant>[0]) => adapter.grant(s, undefined as never),
        deny: (s: Parameters<typeof adapter.deny>[0]) => adapter.deny(s, undefined as never),
        revoke: (s: Parameters<typeof adapter.revoke>[0]) =>
          adapter.revoke(s, { at: c.now, by: 'operator', via: 'api' }),
        find: (s: Parameters<typeof adapter.find>[0]) => adapter.find(s),
        list: (id: string) => adapter.list(id),
      };
      const gw = createTestGateway({ consentRegistry: older, now: () => c.now });
      await gw.netauth.consent.grant({ clientId: 'app-1', subscriberId: 'sub-alice', scope: LOCATION });
      const exported = await gw.netauth.consent.export('sub-alice');
      expect(exported.records).toHaveLength(1);
      expect(exported.records[0]!.evidence).toBeUndefined();
      const list = await consentsPage(gw);
      expect(list.text).toMatch(/<p>Given on <time [^>]*>[^<]+<\/time><\/p>/);
    } finally {
      await master.close();
    }
  });
});
