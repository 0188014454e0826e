import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { createNetAuth, type ConsentPageOptions, type ConsentRule } from '../../../lib/index.js';
import {
  CLIENTS,
  ISSUER,
  POLICY as BASE_POLICY,
  SUBSCRIBERS,
  createTestGateway,
  type TestGateway,
} from '../../helpers/gateway.js';
import { operatorChannel } from '../../helpers/operator-channel.js';
import {
  ALICE_IP,
  LOCATION,
  authorize,
  consentForm,
  cookies,
  formTarget,
  fromDevice,
  localPath,
  location,
} from '../../helpers/frontend.js';

/**
 * Issue 44, "every language": purposes and scopes in the operator's words (`consentPage.labels`), per place (the
 * request, the list, the text message), in each language it serves (`consentPage.languages`, chosen by the
 * subscriber's Accept-Language), the built-in English words the fallback; driven through the router over HTTP.
 */

/** The fixture's policy, its consent rule with plain words and confirmation. */
const POLICY: ConsentRule[] = BASE_POLICY.map((rule) =>
  rule.basis === 'consent' && rule.scope === 'device-location'
    ? { ...rule, description: 'see where the phone you hold is', confirmation: 'required' as const }
    : rule,
);

const SPANISH: ConsentPageOptions['languages'] = {
  es: {
    texts: {
      title: '¿Permitir que {client} use información de su línea móvil?',
      purposeLabel: 'Para qué se pide',
      scopeLabel: 'A qué da acceso',
      allow: 'Permitir',
      errorTitle: 'No se pudo completar la solicitud',
      errorRequest: 'El enlace ya no es válido. Vuelva a la aplicación e inténtelo de nuevo.',
      consentsTitle: 'Sus consentimientos',
      consentMessage: '{operator}: su código es {code}. Escríbalo para permitir que {client} pueda {scopes}.',
    },
    labels: {
      purposes: { FraudPreventionAndDetection: 'Prevención del fraude' },
      scopes: {
        'device-location': {
          request: 'ver dónde está el teléfono que tiene en la mano',
          list: 'Ubicación del teléfono',
          message: 'ver dónde está su teléfono',
        },
      },
    },
  },
};

function gateway(consentPage: ConsentPageOptions = {}) {
  const sms = operatorChannel();
  const gw = createTestGateway({ consentPolicy: POLICY, sendConsentConfirmation: sms.send, consentPage });
  return { gw, sms };
}

/** GET /authorize for the consent scope, then the consent page, both with `language` as Accept-Language. */
async function open(gw: TestGateway, language?: string) {
  const start = await authorize(gw.app, { scope: LOCATION });
  expect(start.status).toBe(302);
  const cookie = cookies(start);
  const pagePath = localPath(location(start));
  const get = () => {
    const req = request(gw.app).get(pagePath).set('Cookie', cookie);
    return language === undefined ? req : req.set('Accept-Language', language);
  };
  const page = await get();
  expect(page.status).toBe(200);
  return { cookie, pagePath, page, get, form: consentForm(page.text) };
}

/** Allow on the page, from the same browser: the code goes out in the page's language. */
async function allow(gw: TestGateway, opened: Awaited<ReturnType<typeof open>>, language?: string) {
  const req = fromDevice(request(gw.app).post(formTarget(opened.pagePath, opened.form.action)))
    .set('Cookie', opened.cookie)
    .type('form');
  if (language !== undefined) req.set('Accept-Language', language);
  const res = await req.send({ interaction: opened.form.interaction, csrf: opened.form.csrf, decision: 'allow' });
  expect(res.status).toBe(303);
  return res;
}

describe('purposes and scopes in the operator words (consentPage.labels)', () => {
  it('without labels: the DPV name in English words and the rule description, as before', async () => {
    const { gw, sms } = gateway();
    const opened = await open(gw);
    expect(opened.page.text).toContain('<p>Fraud prevention and detection</p>');
    expect(opened.page.text).toContain('<li>see where the phone you hold is</li>');
    expect(opened.page.headers.vary ?? '').not.toMatch(/accept-language/i);
    await allow(gw, opened);
    const { signal: _signal, ...context } = sms.messages[0]!.context;
    expect(context).toMatchObject({
      for: 'consent',
      language: 'en',
      purposeText: 'fraud prevention and detection',
      descriptions: ['see where the phone you hold is'],
      message:
        'Your mobile operator: your code is {code}. Type it to allow Fraud Checker to see where the phone you hold is. It expires in 5 min. Never share it.',
    });
  });

  it('one wording per place: the request on the consent page and the code page, the message in the text', async () => {
    const { gw, sms } = gateway({
      operatorName: 'Demo Mobile',
      labels: {
        purposes: { FraudPreventionAndDetection: 'Keeping your account safe' },
        scopes: {
          'device-location': { request: 'where the phone you hold is', list: 'Phone location', message: 'locate it' },
        },
      },
    });
    const opened = await open(gw);
    expect(opened.page.text).toContain('<p>Keeping your account safe</p>');
    expect(opened.page.text).toContain('<li>where the phone you hold is</li>');
    await allow(gw, opened);
    const context = sms.messages[0]!.context;
    expect(context).toMatchObject({
      purposeText: 'Keeping your account safe',
      descriptions: ['locate it'],
      message:
        'Demo Mobile: your code is {code}. Type it to allow Fraud Checker to locate it. It expires in 5 min. Never share it.',
    });
    // The code page names them as the request does.
    const codePage = await opened.get();
    expect(codePage.text).toContain('<li>where the phone you hold is</li>');
    const typed = await fromDevice(request(gw.app).post(formTarget(opened.pagePath, 'consent')))
      .set('Cookie', opened.cookie)
      .type('form')
      .send({ interaction: opened.form.interaction, csrf: opened.form.csrf, decision: 'allow', code: sms.last() });
    expect(typed.status).toBe(303);
  });

  it("the message's template is the operator's: {purpose} and {scopes} in their message words, {code} left", async () => {
    const { gw, sms } = gateway({
      texts: { consentMessage: '{code} ({operator}): {purpose}, {scopes}, {minutes} min' },
      labels: { purposes: { FraudPreventionAndDetection: { request: 'Safety', message: 'for your safety' } } },
    });
    await allow(gw, await open(gw));
    expect(sms.messages[0]!.context).toMatchObject({
      message: '{code} (Your mobile operator): for your safety, see where the phone you hold is, 5 min',
    });
  });

  it('the consents page names them as a list does', async () => {
    // No operator channel: the list opens at once to the line.
    const gw = createTestGateway({
      consentPolicy: POLICY.map((r) => ({ ...r, confirmation: 'off' as const })),
      consentPage: {
        labels: {
          purposes: { FraudPreventionAndDetection: { request: 'Keeping your account safe', list: 'Account safety' } },
          scopes: { 'device-location': { request: 'where the phone you hold is', list: 'Phone location' } },
        },
      },
    });
    const opened = await open(gw);
    await allow(gw, opened);
    const list = await request(gw.app).get('/apigateway/consents').set('X-Forwarded-For', ALICE_IP);
    expect(list.status).toBe(200);
    expect(list.text).toContain('<p>Why it is asked for: Account safety</p>');
    expect(list.text).toContain('<p>What it gets access to: Phone location</p>');
  });
});

describe('the languages the operator serves (consentPage.languages, by Accept-Language)', () => {
  it("the subscriber's Accept-Language picks the page's language, its texts and its labels; the text message follows", async () => {
    const { gw, sms } = gateway({ languages: SPANISH });
    const opened = await open(gw, 'es-ES,es;q=0.9,en;q=0.5');
    const { page } = opened;
    expect(page.text).toContain('<html lang="es">');
    expect(page.headers['content-language']).toBe('es');
    expect(page.headers.vary).toMatch(/Accept-Language/i);
    expect(page.text).toContain('¿Permitir que Fraud Checker use información de su línea móvil?');
    expect(page.text).toContain('<h2>Para qué se pide</h2>\n<p>Prevención del fraude</p>');
    expect(page.text).toContain('<li>ver dónde está el teléfono que tiene en la mano</li>');
    expect(page.text).toContain('value="allow">Permitir</button>');
    // A text it has no translation for: the built-in English one.
    expect(page.text).toContain('value="deny">Deny</button>');

    await allow(gw, opened, 'es-ES,es;q=0.9');
    const context = sms.messages[0]!.context;
    expect(context).toMatchObject({
      language: 'es',
      purposeText: 'Prevención del fraude',
      descriptions: ['ver dónde está su teléfono'],
      message:
        'Your mobile operator: su código es {code}. Escríbalo para permitir que Fraud Checker pueda ver dónde está su teléfono.',
    });
    expect(context.for === 'consent' && context.message).not.toContain(sms.last());
  });

  it('no header, a language it does not serve, or q=0: the page language; exact tags and primary subtags match', async () => {
    const { gw } = gateway({ languages: SPANISH });
    const opened = await open(gw);
    expect(opened.page.text).toContain('<html lang="en">');
    expect(opened.page.headers['content-language']).toBe('en');
    expect(opened.page.text).toContain('<p>Fraud prevention and detection</p>');
    const ask = (header: string) =>
      request(gw.app).get(opened.pagePath).set('Cookie', opened.cookie).set('Accept-Language', header);
    expect((await ask('fr-FR, de;q=0.8')).headers['content-language']).toBe('en');
    expect((await ask('es;q=0, en;q=0.1')).headers['content-language']).toBe('en');
    expect((await ask('es-MX')).headers['content-language']).toBe('es');
    expect((await ask('fr, es;q=0.5')).headers['content-language']).toBe('es');
    expect((await ask('en-GB, es;q=0.9')).headers['content-language']).toBe('en');
  });

  it('the error page and the consents page speak it too', async () => {
    const { gw } = gateway({ languages: SPANISH });
    const error = await request(gw.app).get('/apigateway/consent?interaction=unknown').set('Accept-Language', 'es');
    expect(error.status).toBe(400);
    expect(error.text).toContain('<h1>No se pudo completar la solicitud</h1>');
    expect(error.text).toContain('<p>El enlace ya no es válido. Vuelva a la aplicación e inténtelo de nuevo.</p>');
    const consents = await request(gw.app)
      .get('/apigateway/consents')
      .set('X-Forwarded-For', ALICE_IP)
      .set('Accept-Language', 'es');
    expect(consents.headers['content-language']).toBe('es');
    expect(consents.text).toContain('<html lang="es">');
  });
});

describe('start-up: labels and languages are checked', () => {
  const base = {
    issuer: ISSUER,
    clients: CLIENTS,
    subscribers: SUBSCRIBERS,
    consentPolicy: POLICY,
    pairwiseSalt: 'salt',
    sendConsentConfirmation: async () => {},
  };
  const start = (consentPage: unknown) => () =>
    createNetAuth({ ...base, consentPage: consentPage as ConsentPageOptions });

  it.each([
    [
      { labels: { scopes: { 'device-locaton': 'x' } } },
      'consentPage.labels.scopes.device-locaton: no consentPolicy rule has this scope (known: ',
    ],
    [
      { labels: { purposes: { Fraud: 'x' } } },
      'consentPage.labels.purposes.Fraud: no consentPolicy rule has this purpose',
    ],
    [
      { labels: { scopes: { 'sim-swap': { list: 'x' } } } },
      'consentPage.labels.scopes.sim-swap.request is required (list and message default to it)',
    ],
    [
      { labels: { scopes: { 'sim-swap': { request: 'x', sms: 'y' } } } },
      'consentPage.labels.scopes.sim-swap.sms is not a place: use request, list or message',
    ],
    [{ labels: { scopes: { 'sim-swap': '' } } }, 'consentPage.labels.scopes.sim-swap must be a non-empty string'],
    [{ labels: { purpose: {} } }, 'consentPage.labels.purpose is not an option: purposes or scopes'],
    [{ languages: { es_ES: {} } }, 'consentPage.languages.es_ES: the key must be a BCP 47 language tag'],
    [{ languages: { en: {} } }, 'consentPage.languages.en: this is consentPage.language'],
    [{ languages: { es: { texts: { titel: 'x' } } } }, 'consentPage.languages.es.texts.titel is not a text'],
    [{ languages: { es: { texts: { title: 3 } } } }, 'consentPage.languages.es.texts.title must be a string'],
    [{ languages: { es: { label: {} } } }, 'consentPage.languages.es.label is not an option: texts or labels'],
    [
      { languages: { es: { labels: { scopes: { nope: 'x' } } } } },
      'consentPage.languages.es.labels.scopes.nope: no consentPolicy rule has this scope',
    ],
  ])('%j', (consentPage, message) => {
    expect(start(consentPage)).toThrow(TypeError);
    expect(start(consentPage)).toThrow(message);
  });
});
