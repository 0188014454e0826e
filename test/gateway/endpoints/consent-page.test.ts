import { hashedRecordId } from '../../../lib/crypto.js';
import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { MemoryStore, createNetAuth, type RecordKind, type Store } from '../../../lib/index.js';
import { CLIENTS, ISSUER, POLICY, SUBSCRIBERS, createTestGateway } from '../../helpers/gateway.js';
import {
  fromDevice,
  BOB_IP,
  CGNAT_IP,
  type Device,
  CALLBACK,
  LOCATION,
  answerConsent,
  authorize,
  callback,
  consentForm,
  cookies,
  formTarget,
  localPath,
  location,
  redeem,
} from '../../helpers/frontend.js';
import type { TestGateway } from '../../helpers/gateway.js';
import { wrapStore } from '../../helpers/store-wrapper.js';
import { operatorChannel } from '../../helpers/operator-channel.js';

/** docs/protocol.md, "Consent", frontend flow: the operator's consent page. */

const ALICE = { clientId: 'app-1', login_hint: 'tel:+34600000001', scope: LOCATION };

/** GET /authorize for a scope that needs consent, then the page as a browser would load it. */
async function openPage(gw: TestGateway, overrides: Record<string, string | undefined> = {}) {
  const start = await authorize(gw.app, { scope: LOCATION, ...overrides });
  expect(start.status).toBe(302);
  const cookie = cookies(start);
  const pagePath = localPath(location(start));
  const page = await request(gw.app).get(pagePath).set('Cookie', cookie);
  return { start, cookie, pagePath, page, form: consentForm(page.text) };
}

/** A POST from ALICE's phone, the line the tests' requests start on. */
function post(gw: TestGateway, path: string, cookie: string | undefined, body: Record<string, string>) {
  const req = fromDevice(request(gw.app).post(path)).type('form').send(body);
  if (cookie !== undefined) req.set('Cookie', cookie);
  return req;
}

describe('consent needed: the browser is sent to the operator consent page', () => {
  const gw = createTestGateway();

  it('302 to {issuer}/consent, with a session cookie and no code', async () => {
    const res = await authorize(gw.app, { scope: LOCATION });
    expect(res.status).toBe(302);
    const url = location(res);
    expect(`${url.origin}${url.pathname}`).toBe(`${ISSUER}/consent`);
    expect(url.searchParams.get('interaction')).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    expect(url.searchParams.has('code')).toBe(false);
    const setCookie = (res.headers['set-cookie'] as unknown as string[]).join('\n');
    expect(setCookie).toMatch(/^netauth\.sid=/);
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Lax');
    expect(setCookie).toContain('Path=/apigateway');
    expect(setCookie).not.toContain('Secure'); // the fixture's issuer is http
  });

  it('no session and no cookie is created when consent is not needed', async () => {
    const res = await authorize(gw.app);
    expect(res.headers['set-cookie']).toBeUndefined();
  });

  it('the page: plain HTML naming the application, the purpose in plain words and the scope, with Allow and Deny', async () => {
    const { page } = await openPage(gw);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html; charset=utf-8/);
    expect(page.text).toContain('<html lang="en">');
    expect(page.text).toContain('Fraud Checker');
    expect(page.text).toContain('Fraud prevention and detection');
    expect(page.text).toContain('device-location');
    expect(page.text).toMatch(/<button type="submit" class="allow" name="decision" value="allow">Allow<\/button>/);
    expect(page.text).toMatch(/<button type="submit" class="deny" name="decision" value="deny">Deny<\/button>/);
    expect(page.text).toContain('<form method="post" action="consent"');
  });

  it('the page has no external assets and no scripts', async () => {
    const { page } = await openPage(gw);
    expect(page.text).not.toMatch(/<script|<link|<iframe|src="|url\(|@import/i);
    const csp = page.headers['content-security-policy'] as string;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("img-src 'none'");
    expect(csp).toMatch(/style-src 'nonce-[A-Za-z0-9+/=]+'/);
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("form-action 'self' https://app.example");
    const nonce = /'nonce-([^']+)'/.exec(csp)![1]!;
    expect(page.text).toContain(`<style nonce="${nonce}">`);
  });

  it('the page is not framed, cached or leaked as a Referer', async () => {
    const { page } = await openPage(gw);
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['x-content-type-options']).toBe('nosniff');
  });

  it('reloading the page shows the same form', async () => {
    const { cookie, pagePath, form } = await openPage(gw);
    const again = await request(gw.app).get(pagePath).set('Cookie', cookie);
    expect(consentForm(again.text)).toEqual(form);
  });
});

describe('allow and deny, driven as a browser would', () => {
  it('Allow: consent recorded, 303 to redirect_uri with code, state and iss; the code gets a token', async () => {
    const gw = createTestGateway();
    const start = await authorize(gw.app, { scope: LOCATION, state: 'tab 1 ☎' });
    const answer = await answerConsent(gw, start, 'allow');
    expect(answer.status).toBe(303);
    const url = location(answer);
    expect(`${url.origin}${url.pathname}`).toBe(CALLBACK);
    const q = callback(answer);
    expect(q.code).toMatch(/^[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{43}$/);
    expect(q.state).toBe('tab 1 ☎');
    expect(q.iss).toBe(ISSUER);
    expect(answer.headers['referrer-policy']).toBe('no-referrer');

    const records = await gw.netauth.consent.lookup(ALICE);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      clientId: 'app-1',
      subscriberId: 'sub-alice',
      purpose: 'FraudPreventionAndDetection',
      scope: 'device-location',
      status: 'granted',
    });

    const token = await redeem(gw.app, { code: q.code!, redirect_uri: CALLBACK });
    expect(token.status).toBe(200);
    expect(token.body.scope).toBe(LOCATION);
    const api = await request(gw.app)
      .get('/location')
      .set('Authorization', `Bearer ${token.body.access_token as string}`);
    expect(api.status).toBe(200);
    expect(api.body.subscriber).toBe('sub-alice');
  });

  it('with consent on record the next request skips the page; prompt=consent shows it again', async () => {
    const gw = createTestGateway();
    await answerConsent(gw, await authorize(gw.app, { scope: LOCATION }), 'allow');
    const next = await authorize(gw.app, { scope: LOCATION });
    expect(callback(next).code).toBeDefined();
    const forced = await authorize(gw.app, { scope: LOCATION, prompt: 'consent' });
    expect(location(forced).pathname).toBe('/apigateway/consent');
  });

  it('Deny: 303 to redirect_uri with error=access_denied, state and iss; no code, the refusal recorded', async () => {
    const gw = createTestGateway();
    const answer = await answerConsent(gw, await authorize(gw.app, { scope: LOCATION }), 'deny');
    expect(answer.status).toBe(303);
    const q = callback(answer);
    expect(q).toMatchObject({ error: 'access_denied', state: 'state-123', iss: ISSUER });
    expect(q.code).toBeUndefined();
    expect((await gw.netauth.consent.lookup(ALICE)).map((r) => r.status)).toEqual(['denied']);
    // A refusal is not final on the frontend: the subscriber is asked again next time.
    expect(location(await authorize(gw.app, { scope: LOCATION })).pathname).toBe('/apigateway/consent');
  });

  it('no state sent: none on the 303 either', async () => {
    const gw = createTestGateway();
    const answer = await answerConsent(gw, await authorize(gw.app, { scope: LOCATION, state: undefined }), 'allow');
    expect(location(answer).searchParams.has('state')).toBe(false);
  });

  it('keeps the PKCE challenge and the nonce through the page', async () => {
    const store = new MemoryStore({ sweepInterval: 0, now: () => 1_800_000_000_000 });
    const gw = createTestGateway({ store });
    const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
    const answer = await answerConsent(
      gw,
      await authorize(gw.app, {
        scope: LOCATION,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        nonce: 'n-1',
      }),
      'allow',
    );
    const stored = await store.get('code', hashedRecordId(callback(answer).code!));
    expect(stored?.value).toMatchObject({ codeChallenge: challenge, nonce: 'n-1' });
    const token = await redeem(gw.app, {
      code: callback(answer).code!,
      redirect_uri: CALLBACK,
      code_verifier: 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk',
    });
    expect(token.status).toBe(200);
  });

  it('two tabs of one browser: each request keeps its own form', async () => {
    const gw = createTestGateway();
    const first = await authorize(gw.app, { scope: LOCATION, state: 'one' });
    const second = await authorize(gw.app, { scope: LOCATION, state: 'two' }, { cookie: cookies(first) });
    // A new session id for the second request (no fixation), holding both requests of the same subscriber.
    const cookie = cookies(second);
    expect(cookie).toMatch(/^netauth\.sid=/);
    expect(cookie).not.toBe(cookies(first));
    const pageOne = await request(gw.app)
      .get(localPath(location(first)))
      .set('Cookie', cookie);
    const pageTwo = await request(gw.app)
      .get(localPath(location(second)))
      .set('Cookie', cookie);
    const formOne = consentForm(pageOne.text);
    const formTwo = consentForm(pageTwo.text);
    expect(formOne.csrf).not.toBe(formTwo.csrf);
    const answerTwo = await post(gw, '/apigateway/consent', cookie, {
      interaction: formTwo.interaction,
      csrf: formTwo.csrf,
      decision: 'deny',
    });
    expect(callback(answerTwo)).toMatchObject({ error: 'access_denied', state: 'two' });
    const answerOne = await post(gw, '/apigateway/consent', cookie, {
      interaction: formOne.interaction,
      csrf: formOne.csrf,
      decision: 'allow',
    });
    expect(callback(answerOne).state).toBe('one');
    expect(callback(answerOne).code).toBeDefined();
  });
});

describe('session fixation: every interaction starts in a new session', () => {
  /** The attacker's own /authorize, from their own device: a session cookie they then plant in the victim's browser. */
  async function plantedCookie(gw: TestGateway): Promise<string> {
    const own = await authorize(gw.app, { scope: LOCATION, state: 'attacker' }, { ip: BOB_IP });
    expect(own.status).toBe(302);
    return cookies(own);
  }

  it("the victim's /authorize with a planted cookie sets a new session id; that cookie cannot see it", async () => {
    const gw = createTestGateway();
    const planted = await plantedCookie(gw);
    const victim = await authorize(gw.app, { scope: LOCATION, state: 'victim' }, { cookie: planted });
    expect(victim.status).toBe(302);
    const renewed = cookies(victim);
    expect(renewed).toMatch(/^netauth\.sid=/);
    expect(renewed).not.toBe(planted);
    const pagePath = localPath(location(victim));
    const seenByAttacker = await request(gw.app).get(pagePath).set('Cookie', planted);
    expect(seenByAttacker.status).toBe(400);
    expect(seenByAttacker.text).not.toContain('<form');
    const page = await request(gw.app).get(pagePath).set('Cookie', renewed);
    expect(page.status).toBe(200);
    expect(consentForm(page.text).interaction).toBe(location(victim).searchParams.get('interaction'));
  });

  it("the planted cookie cannot evict the victim's request, nor answer it", async () => {
    const gw = createTestGateway();
    const planted = await plantedCookie(gw);
    const victim = await authorize(gw.app, { scope: LOCATION, state: 'victim' }, { cookie: planted });
    const renewed = cookies(victim);
    const pagePath = localPath(location(victim));
    const form = consentForm((await request(gw.app).get(pagePath).set('Cookie', renewed)).text);
    // More requests than one session keeps, all with the planted cookie.
    for (let i = 0; i < 6; i += 1) {
      expect((await authorize(gw.app, { scope: LOCATION }, { ip: BOB_IP, cookie: planted })).status).toBe(302);
    }
    const answerForm = { interaction: form.interaction, csrf: form.csrf, decision: 'allow' };
    const byAttacker = await post(gw, '/apigateway/consent', planted, answerForm);
    expect(byAttacker.status).toBe(403);
    const answer = await post(gw, '/apigateway/consent', renewed, answerForm);
    expect(answer.status).toBe(303);
    expect(callback(answer)).toMatchObject({ state: 'victim', code: expect.any(String) });
  });

  it("the attacker's request is not carried into the victim's new session", async () => {
    const gw = createTestGateway();
    const planted = await authorize(gw.app, { scope: LOCATION, state: 'attacker' }, { ip: BOB_IP });
    const victim = await authorize(gw.app, { scope: LOCATION, state: 'victim' }, { cookie: cookies(planted) });
    const attackerPage = await request(gw.app)
      .get(localPath(location(planted)))
      .set('Cookie', cookies(victim));
    expect(attackerPage.status).toBe(400);
  });
});

describe('the form is bound to the session by a CSRF token', () => {
  async function refusedAndNothingRecorded(gw: TestGateway, res: request.Response): Promise<void> {
    expect(res.status).toBe(403);
    expect(res.headers.location).toBeUndefined();
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(await gw.netauth.consent.lookup(ALICE)).toEqual([]);
  }

  it('a POST without the CSRF token is refused (403) and nothing is recorded; the real form still works', async () => {
    const gw = createTestGateway();
    const { cookie, pagePath, form } = await openPage(gw);
    const target = formTarget(pagePath, form.action);
    await refusedAndNothingRecorded(
      gw,
      await post(gw, target, cookie, { interaction: form.interaction, decision: 'allow' }),
    );
    const real = await post(gw, target, cookie, { interaction: form.interaction, csrf: form.csrf, decision: 'allow' });
    expect(real.status).toBe(303);
    expect(callback(real).code).toBeDefined();
  });

  it('a wrong CSRF token is refused', async () => {
    const gw = createTestGateway();
    const { cookie, form } = await openPage(gw);
    const wrong = `${form.csrf.slice(0, -1)}${form.csrf.endsWith('A') ? 'B' : 'A'}`;
    await refusedAndNothingRecorded(
      gw,
      await post(gw, '/apigateway/consent', cookie, { interaction: form.interaction, csrf: wrong, decision: 'allow' }),
    );
    await refusedAndNothingRecorded(
      gw,
      await post(gw, '/apigateway/consent', cookie, { interaction: form.interaction, csrf: '', decision: 'allow' }),
    );
    await refusedAndNothingRecorded(
      gw,
      await post(gw, '/apigateway/consent', cookie, {
        interaction: form.interaction,
        csrf: 'x'.repeat(5000),
        decision: 'allow',
      }),
    );
  });

  it('a cross-site POST (no session cookie) is refused, even with the right token', async () => {
    const gw = createTestGateway();
    const { form } = await openPage(gw);
    await refusedAndNothingRecorded(
      gw,
      await post(gw, '/apigateway/consent', undefined, {
        interaction: form.interaction,
        csrf: form.csrf,
        decision: 'allow',
      }),
    );
  });

  it("another session's token is refused (the token belongs to the session that was shown the form)", async () => {
    const gw = createTestGateway();
    const mine = await openPage(gw);
    const theirs = await openPage(gw);
    await refusedAndNothingRecorded(
      gw,
      await post(gw, '/apigateway/consent', theirs.cookie, {
        interaction: mine.form.interaction,
        csrf: mine.form.csrf,
        decision: 'allow',
      }),
    );
    await refusedAndNothingRecorded(
      gw,
      await post(gw, '/apigateway/consent', theirs.cookie, {
        interaction: theirs.form.interaction,
        csrf: mine.form.csrf,
        decision: 'allow',
      }),
    );
  });

  it('a forged session cookie is ignored', async () => {
    const gw = createTestGateway();
    const { form } = await openPage(gw);
    await refusedAndNothingRecorded(
      gw,
      await post(gw, '/apigateway/consent', 'netauth.sid=s%3Aforged.signature', {
        interaction: form.interaction,
        csrf: form.csrf,
        decision: 'allow',
      }),
    );
  });

  it('a form answered twice: the first answer stands, the second is refused', async () => {
    const gw = createTestGateway();
    const { cookie, form } = await openPage(gw);
    const body = { interaction: form.interaction, csrf: form.csrf, decision: 'allow' };
    const [a, b] = await Promise.all([
      post(gw, '/apigateway/consent', cookie, body),
      post(gw, '/apigateway/consent', cookie, body),
    ]);
    expect([a.status, b.status].sort()).toEqual([303, 403]);
    const again = await post(gw, '/apigateway/consent', cookie, body);
    expect(again.status).toBe(403);
  });

  it('a decision other than allow or deny: 400 page, nothing recorded', async () => {
    const gw = createTestGateway();
    const { cookie, form } = await openPage(gw);
    const res = await post(gw, '/apigateway/consent', cookie, {
      interaction: form.interaction,
      csrf: form.csrf,
      decision: 'maybe',
    });
    expect(res.status).toBe(400);
    expect(res.headers.location).toBeUndefined();
    expect(await gw.netauth.consent.lookup(ALICE)).toEqual([]);
  });

  it('the page without a pending request (no cookie, or an unknown interaction): 400 page', async () => {
    const gw = createTestGateway();
    const { cookie } = await openPage(gw);
    for (const res of [
      await request(gw.app).get('/apigateway/consent?interaction=nope'),
      await request(gw.app).get('/apigateway/consent?interaction=nope').set('Cookie', cookie),
      await request(gw.app).get('/apigateway/consent').set('Cookie', cookie),
    ]) {
      expect(res.status).toBe(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.headers['set-cookie']).toBeUndefined();
    }
  });

  it('a POST that is not a form: 400 page', async () => {
    const gw = createTestGateway();
    const { cookie, form } = await openPage(gw);
    const res = await request(gw.app)
      .post('/apigateway/consent')
      .set('Cookie', cookie)
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ interaction: form.interaction, csrf: form.csrf, decision: 'allow' }));
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
  });

  it('other methods: 405 with Allow', async () => {
    const gw = createTestGateway();
    const res = await request(gw.app).put('/apigateway/consent');
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD, POST');
  });
});

describe('the pending request expires', () => {
  it('answered after lifetimes.interaction: 303 access_denied, nothing recorded', async () => {
    const gw = createTestGateway();
    const { cookie, form } = await openPage(gw);
    gw.clock.advance(601);
    const res = await post(gw, '/apigateway/consent', cookie, {
      interaction: form.interaction,
      csrf: form.csrf,
      decision: 'allow',
    });
    expect(res.status).toBe(303);
    expect(callback(res)).toMatchObject({
      error: 'access_denied',
      error_description: 'the consent request expired',
      state: 'state-123',
      iss: ISSUER,
    });
    expect(await gw.netauth.consent.lookup(ALICE)).toEqual([]);
  });

  it('the page opened after expiry sends the browser back with access_denied', async () => {
    const gw = createTestGateway({ lifetimes: { interaction: 30 } });
    const start = await authorize(gw.app, { scope: LOCATION });
    gw.clock.advance(31);
    const page = await request(gw.app)
      .get(localPath(location(start)))
      .set('Cookie', cookies(start));
    expect(page.status).toBe(302);
    expect(callback(page).error).toBe('access_denied');
  });

  it('still answerable just before expiry', async () => {
    const gw = createTestGateway();
    const { cookie, form } = await openPage(gw);
    gw.clock.advance(599);
    const res = await post(gw, '/apigateway/consent', cookie, {
      interaction: form.interaction,
      csrf: form.csrf,
      decision: 'allow',
    });
    expect(callback(res).code).toBeDefined();
  });

  it('long after (the session forgotten by the store): the form is refused', async () => {
    const gw = createTestGateway();
    const { cookie, form } = await openPage(gw);
    gw.clock.advance(3600);
    const res = await post(gw, '/apigateway/consent', cookie, {
      interaction: form.interaction,
      csrf: form.csrf,
      decision: 'allow',
    });
    expect(res.status).toBe(403);
  });
});

describe('sessions live in the package store (kind "session")', () => {
  it('the pending request and the single-use marker go through the Store contract', async () => {
    const inner = new MemoryStore({ sweepInterval: 0 });
    const kinds = new Set<RecordKind>();
    const store: Store = wrapStore(inner, {
      put: (kind, id, value, options) => {
        kinds.add(kind);
        return inner.put(kind, id, value, options);
      },
    });
    const gw = createTestGateway({ store });
    const answer = await answerConsent(gw, await authorize(gw.app, { scope: LOCATION }), 'allow');
    expect(answer.status).toBe(303);
    expect([...kinds].sort()).toEqual(['code', 'consent', 'interaction', 'session']);
  });

  it('a session signed with a shared secret is read by another instance over the same store', async () => {
    const store = new MemoryStore({ sweepInterval: 0 });
    const a = createTestGateway({ store, consentPage: { cookieSecret: 'shared-secret-of-the-fleet' } });
    const b = createTestGateway({
      store,
      consentPage: { cookieSecret: ['next-secret-of-the-fleet', 'shared-secret-of-the-fleet'] },
    });
    const start = await authorize(a.app, { scope: LOCATION });
    const answer = await answerConsent(b, start, 'allow');
    expect(callback(answer).code).toBeDefined();
  });
});

describe('theming', () => {
  it('operator name, colours, logo, language, texts and privacy link', async () => {
    const gw = createTestGateway({
      consentPage: {
        operatorName: 'Telco & Co',
        primaryColor: '#e60000',
        primaryTextColor: 'white',
        backgroundColor: 'rgb(250, 250, 250)',
        textColor: 'hsl(0 0% 10%)',
        logoUrl: 'https://cdn.telco.example/logo.svg',
        language: 'es',
        privacyPolicyUrl: 'https://telco.example/privacy',
        texts: { allow: 'Permitir', deny: 'Rechazar', title: '¿Permitir a {client} usar datos de tu línea?' },
      },
    });
    const { page } = await openPage(gw);
    expect(page.text).toContain('<html lang="es">');
    expect(page.text).toContain('Telco &#38; Co');
    expect(page.text).toContain('background: #e60000');
    expect(page.text).toContain('background: rgb(250, 250, 250)');
    expect(page.text).toContain('<img src="https://cdn.telco.example/logo.svg" alt="">');
    expect(page.text).toContain('>Permitir</button>');
    expect(page.text).toContain('>Rechazar</button>');
    expect(page.text).toContain('¿Permitir a Fraud Checker usar datos de tu línea?');
    expect(page.text).toContain('href="https://telco.example/privacy"');
    expect(page.headers['content-security-policy']).toContain('img-src https://cdn.telco.example/logo.svg;');
  });

  it('a logo on this host or inline', async () => {
    const local = createTestGateway({ consentPage: { logoUrl: '/static/logo.png' } });
    expect((await openPage(local)).page.headers['content-security-policy']).toContain("img-src 'self'");
    const inline = createTestGateway({ consentPage: { logoUrl: 'data:image/png;base64,iVBORw0KGgo=' } });
    expect((await openPage(inline)).page.headers['content-security-policy']).toContain('img-src data:');
  });

  it("the policy's plain-words description of each scope is shown, instead of the scope value", async () => {
    const gw = createTestGateway({
      consentPolicy: POLICY.map((r) =>
        r.scope === 'device-location' ? { ...r, description: 'see where your phone is, roughly' } : r,
      ),
    });
    const { text } = (await openPage(gw)).page;
    expect(text).toContain('<li>see where your phone is, roughly</li>');
    expect(text).not.toContain('device-location');
  });

  it("escapes the client's name and every text", async () => {
    const gw = createTestGateway({
      clients: CLIENTS.map((c) => (c.clientId === 'app-1' ? { ...c, name: '<img src=x onerror=alert(1)>"' } : c)),
      consentPage: { operatorName: '</style><script>x</script>' },
    });
    const { page } = await openPage(gw);
    expect(page.text).not.toContain('<img src=x');
    expect(page.text).not.toContain('<script>');
    expect(page.text).toContain('&#60;img src=x onerror=alert(1)&#62;&#34;');
  });

  it.each([
    [{ primaryColor: 'red; } body { display: none' }],
    [{ primaryColor: 'url(https://evil.example/x)' }],
    [{ logoUrl: 'javascript:alert(1)' }],
    [{ logoUrl: '//evil.example/logo.png' }],
    [{ logoUrl: 'https://a.example/x.png; script-src *' }],
    [{ language: 'en"><script>' }],
    [{ cookieSecret: 'short' }],
    [{ cookieName: 'bad name' }],
    [{ privacyPolicyUrl: 'javascript:alert(1)' }],
  ])('refuses options that could break the page or its CSP: %j', (consentPage) => {
    expect(() =>
      createNetAuth({ issuer: ISSUER, clients: CLIENTS, subscribers: SUBSCRIBERS, consentPolicy: POLICY, consentPage }),
    ).toThrow(TypeError);
  });
});

describe('consent withdrawn', () => {
  it('before the code is redeemed: the code dies with it', async () => {
    const gw = createTestGateway();
    const answer = await answerConsent(gw, await authorize(gw.app, { scope: LOCATION }), 'allow');
    await gw.netauth.consent.revoke(ALICE);
    const token = await redeem(gw.app, { code: callback(answer).code!, redirect_uri: CALLBACK });
    expect(token.status).toBe(400);
    expect(token.body.error).toBe('invalid_grant');
  });

  it('after: the token issued under it is rejected by the guard', async () => {
    const gw = createTestGateway();
    const answer = await answerConsent(gw, await authorize(gw.app, { scope: LOCATION }), 'allow');
    const token = await redeem(gw.app, { code: callback(answer).code!, redirect_uri: CALLBACK });
    const bearer = `Bearer ${token.body.access_token as string}`;
    expect((await request(gw.app).get('/location').set('Authorization', bearer)).status).toBe(200);
    await gw.netauth.consent.revoke(ALICE);
    const after = await request(gw.app).get('/location').set('Authorization', bearer);
    expect(after.status).toBe(401);
    expect(after.headers['www-authenticate']).toContain('error="invalid_token"');
  });
});

describe("the browser's Back button after the answer", () => {
  it.each([
    ['allow', 'You allowed Fraud Checker to use this information.'],
    ['deny', 'You did not allow Fraud Checker to use this information.'],
  ] as const)(
    'after %s: the page says what was answered and links back to the application; the form is gone',
    async (decision, sentence) => {
      const gw = createTestGateway();
      const { cookie, pagePath, form } = await openPage(gw);
      const answer = await post(gw, '/apigateway/consent', cookie, {
        interaction: form.interaction,
        csrf: form.csrf,
        decision,
      });
      expect(answer.status).toBe(303);

      const back = await request(gw.app).get(pagePath).set('Cookie', cookie);
      expect(back.status).toBe(200);
      expect(back.headers['cache-control']).toBe('no-store');
      expect(back.text).toContain(`<h1>${sentence}</h1>`);
      expect(back.text).toContain('<a href="https://app.example/">Return to Fraud Checker</a>');
      expect(back.text).not.toContain('<form');
      // The old form stays answered once: no second decision, nothing recorded twice.
      const again = await post(gw, '/apigateway/consent', cookie, {
        interaction: form.interaction,
        csrf: form.csrf,
        decision: 'allow',
      });
      expect(again.status).toBe(403);
      expect((await gw.netauth.consent.lookup(ALICE)).map((r) => r.status)).toEqual([
        decision === 'allow' ? 'granted' : 'denied',
      ]);
    },
  );

  it('a native application (custom-scheme redirect_uri): the answer without a link', async () => {
    const gw = createTestGateway({
      clients: CLIENTS.map((c) => (c.clientId === 'app-1' ? { ...c, redirectUris: ['com.example.app:/cb'] } : c)),
    });
    const { cookie, pagePath, form } = await openPage(gw, { redirect_uri: 'com.example.app:/cb' });
    await post(gw, '/apigateway/consent', cookie, {
      interaction: form.interaction,
      csrf: form.csrf,
      decision: 'allow',
    });
    const back = await request(gw.app).get(pagePath).set('Cookie', cookie);
    expect(back.text).toContain('You allowed Fraud Checker');
    // The footer's link to the consents page only: none to the application.
    expect(back.text.match(/<a href="[^"]*"/g)).toEqual(['<a href="consents"']);
  });

  it("the texts are the operator's, escaped", async () => {
    const gw = createTestGateway({
      consentPage: { texts: { answeredAllow: 'Hecho: {client} <ok>', returnLink: 'Volver a {client}' } },
    });
    const { cookie, pagePath, form } = await openPage(gw);
    await post(gw, '/apigateway/consent', cookie, {
      interaction: form.interaction,
      csrf: form.csrf,
      decision: 'allow',
    });
    const back = await request(gw.app).get(pagePath).set('Cookie', cookie);
    expect(back.text).toContain('Hecho: Fraud Checker &#60;ok&#62;');
    expect(back.text).toContain('Volver a Fraud Checker');
  });
});

describe('the answer comes from the line the request started on (issue 42, finding 9)', () => {
  const REQUIRED = POLICY.map((r) => (r.basis === 'consent' ? { ...r, confirmation: 'required' as const } : r));

  /** The consent page's form, answered with `fields` from `device`. */
  function answer(gw: TestGateway, opened: Awaited<ReturnType<typeof openPage>>, device: Device, fields: object) {
    const { form, cookie } = opened;
    return fromDevice(request(gw.app).post('/apigateway/consent'), device)
      .set('Cookie', cookie)
      .type('form')
      .send({ interaction: form.interaction, csrf: form.csrf, ...fields });
  }

  function refusedHere(res: Awaited<ReturnType<typeof answer>>) {
    expect(res.status).toBe(403);
    expect(res.headers.location).toBeUndefined();
    expect(res.text).toContain('This request can only be answered from the phone line it was made for');
  }

  it('the cookie and the code from another line: no authorization code; from the line itself, the code', async () => {
    const sms = operatorChannel();
    const gw = createTestGateway({ consentPolicy: REQUIRED, sendConsentConfirmation: sms.send });
    const opened = await openPage(gw);
    expect((await answer(gw, opened, {}, { decision: 'allow' })).status).toBe(303);
    expect(sms.messages).toHaveLength(1);
    const code = sms.last();
    for (const device of [{ ip: BOB_IP }, { ip: '192.168.1.20' }, { ip: '' }, { ip: CGNAT_IP, port: '3000' }])
      refusedHere(await answer(gw, opened, device, { decision: 'allow', code }));
    expect(await gw.netauth.consent.lookup(ALICE)).toEqual([]);
    // Not completed: the line itself still answers it, with the same code (no attempt was spent).
    const done = await answer(gw, opened, {}, { decision: 'allow', code });
    expect(done.status).toBe(303);
    expect(callback(done).code).toBeDefined();
  });

  it("Allow and Deny from another line change nothing; another of the subscriber's own addresses answers", async () => {
    const gw = createTestGateway();
    const opened = await openPage(gw);
    refusedHere(await answer(gw, opened, { ip: BOB_IP }, { decision: 'allow' }));
    refusedHere(await answer(gw, opened, { ip: BOB_IP }, { decision: 'deny' }));
    expect(await gw.netauth.consent.lookup(ALICE)).toEqual([]);
    const done = await answer(gw, opened, { ip: '2001:db8::1' }, { decision: 'allow' });
    expect(callback(done).code).toBeDefined();
  });

  it('sandbox mode (the login_hint identified the line, not the network): no line to check', async () => {
    const gw = createTestGateway({ sandbox: { allowList: ['tel:+34600000001'] }, network: undefined });
    const opened = await openPage(gw, { login_hint: 'tel:+34600000001' });
    const done = await answer(gw, opened, { ip: '' }, { decision: 'allow' });
    expect(callback(done).code).toBeDefined();
  });

  it('behind CGNAT the port tells the lines apart: another port of the same line answers, another line does not', async () => {
    const gw = createTestGateway();
    const start = await authorize(gw.app, { scope: LOCATION }, { ip: CGNAT_IP, port: '1500' });
    const cookie = cookies(start);
    const page = await request(gw.app)
      .get(localPath(location(start)))
      .set('Cookie', cookie);
    const opened = { start, cookie, pagePath: '', page, form: consentForm(page.text) };
    refusedHere(await answer(gw, opened, { ip: CGNAT_IP, port: '3000' }, { decision: 'allow' }));
    refusedHere(await answer(gw, opened, { ip: CGNAT_IP }, { decision: 'allow' }));
    const done = await answer(gw, opened, { ip: CGNAT_IP, port: '1600' }, { decision: 'allow' });
    expect(callback(done).code).toBeDefined();
  });
});
