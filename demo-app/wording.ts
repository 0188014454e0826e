/**
 * The demo operator's words for its purposes and scopes, and its second language: the subscriber pages in Spanish
 * for a browser whose Accept-Language asks for it (`consentPage.languages`), the text message with the code too.
 * Labels are given only for the rules the config has (a label no rule uses is a start-up error).
 */
import type { ConsentPageTexts, LabelWording, PageLabels, PageLanguageOptions } from '../lib/index.js';
import type { DemoConfig } from './config.js';

interface Wording {
  purposes: Record<string, LabelWording>;
  scopes: Record<string, LabelWording>;
}

/** English purposes: the operator's words rather than the DPV names. */
const ENGLISH_PURPOSES: Record<string, string> = {
  RequestedServiceProvision: 'To provide the service you asked for',
  FraudPreventionAndDetection: 'To prevent and detect fraud',
};

/** English, for the list and the message: fewer words than the request (the rule's description). */
const ENGLISH_SHORT: Record<string, { list: string; message: string }> = {
  'number-verification': { list: 'Confirm that a number you give is this line', message: 'confirm your phone number' },
  'sim-swap': { list: 'Check for a recent SIM swap', message: 'check for a recent SIM swap' },
};

const SPANISH_LABELS: Wording = {
  purposes: {
    RequestedServiceProvision: 'Prestarle el servicio que ha pedido',
    FraudPreventionAndDetection: 'Prevenir y detectar el fraude',
  },
  scopes: {
    'number-verification': {
      request: 'confirmar que el número de teléfono que ha escrito es el de este teléfono',
      list: 'Confirmar que un número que usted da es el de esta línea',
      message: 'confirmar su número de teléfono',
    },
    'sim-swap': {
      request: 'comprobar si la tarjeta SIM de su línea se ha cambiado hace poco',
      list: 'Comprobar un cambio reciente de SIM',
      message: 'comprobar si su SIM se ha cambiado',
    },
  },
};

const SPANISH_TEXTS: ConsentPageTexts = {
  title: '¿Permitir que {client} use información de su línea móvil?',
  intro: '{client} pide acceso a {operator}. No se comparte nada salvo que usted lo permita.',
  purposeLabel: 'Para qué se pide',
  scopeLabel: 'A qué da acceso',
  allow: 'Permitir',
  deny: 'Rechazar',
  footer: 'Puede retirar su consentimiento en cualquier momento a través de {operator}.',
  consentsLink: 'Ver y retirar sus consentimientos',
  errorTitle: 'No se pudo completar la solicitud',
  errorRequest:
    'El enlace que le ha traído aquí ya no es válido, o no era para esta página. Vuelva a la aplicación e inténtelo de nuevo.',
  errorDenied: '{operator} no ha podido dar curso a esta solicitud. Vuelva a la aplicación e inténtelo de nuevo.',
  errorUnavailable: '{operator} no puede responder ahora. Espere un momento y vuelva a intentarlo.',
  errorServer: 'Algo ha fallado en {operator}. Inténtelo más tarde.',
  errorDetail: 'Detalles para quien desarrolla la aplicación',
  answeredAllow: 'Ha permitido que {client} use esta información.',
  answeredDeny: 'No ha permitido que {client} use esta información.',
  returnLink: 'Volver a {client}',
  codeTitle: 'Escriba el código que {operator} ha enviado a su teléfono',
  codeIntro:
    '{operator} le ha enviado un código en un mensaje de texto. Escríbalo aquí para permitir el acceso a {client}. Nadie de {operator} se lo pedirá.',
  codeLabel: 'Código de confirmación',
  codeHint: '6 cifras, del mensaje de su teléfono',
  confirm: 'Confirmar',
  wrongCode: 'Ese código no es correcto. Intentos restantes: {attempts}.',
  malformedCode: 'Escriba las 6 cifras del código.',
  sendFailedTitle: 'No se pudo enviar el código de confirmación',
  sendFailed:
    '{operator} no ha podido enviar el código a su teléfono ahora mismo. No se ha compartido nada con {client}. Envíe el código de nuevo, o rechace.',
  resend: 'Enviar el código de nuevo',
  consentsCodeIntro:
    '{operator} le ha enviado un código en un mensaje de texto. Escríbalo aquí para ver sus consentimientos. Nadie de {operator} se lo pedirá.',
  consentsSendTitle: 'Un código para ver sus consentimientos',
  consentsSendIntro:
    'Para mostrar sus consentimientos, {operator} envía primero un código a su teléfono en un mensaje de texto. Lo escribirá en la página siguiente.',
  sendCode: 'Enviarme un código',
  consentsSendFailed:
    '{operator} no ha podido enviar el código a su teléfono ahora mismo. No se ha mostrado ni cambiado nada.',
  newCode: 'Enviar un código nuevo',
  codeEndedTitle: 'Este código ya no se puede usar',
  codeEnded:
    'El código ha caducado, o se ha escrito un código incorrecto demasiadas veces. Pida un código nuevo: {operator} se lo envía al teléfono.',
  codesLimitTitle: 'Se han enviado demasiados códigos a su teléfono',
  codesLimit:
    '{operator} ha enviado varios códigos a su teléfono en los últimos minutos. Espere {minutes} min y vuelva a intentarlo.',
  consentMessage:
    '{operator}: su código es {code}. Escríbalo para permitir que {client} pueda {scopes}. Caduca en {minutes} min. No lo comparta.',
  consentsMessage:
    '{operator}: su código es {code}. Escríbalo para ver sus consentimientos. Caduca en {minutes} min. No lo comparta.',
  consentsTitle: 'Sus consentimientos',
  consentsIntro:
    'Las aplicaciones a las que ha permitido usar información de su línea móvil a través de {operator}. Si retira un consentimiento, la aplicación pierde el acceso al instante.',
  consentsEmpty: 'Ninguna aplicación tiene su consentimiento en este momento.',
  consentsGiven: 'Dado el',
  consentsViaPage: 'en la página de consentimiento',
  consentsConfirmed: 'confirmado con un código enviado por {channel}',
  consentsViaOperator: 'a través de {operator}',
  consentsViaRegistry: 'registrado por {operator}',
  withdraw: 'Retirar',
  withdrawn: '{client} ya no tiene su consentimiento. No puede seguir usando esta información.',
  notIdentifiedTitle: 'No hemos reconocido su línea',
  notIdentified:
    'Abra esta página en su teléfono, conectado a la red móvil de {operator} (no por WiFi), para ver sus consentimientos.',
};

/** Only the labels of the purposes and scopes the config's rules have. */
function forRules(config: DemoConfig, wording: Wording): PageLabels {
  const purposes = new Set(config.consentPolicy.map((r) => r.purpose));
  const scopes = new Set(config.consentPolicy.map((r) => r.scope));
  return {
    purposes: Object.fromEntries(Object.entries(wording.purposes).filter(([p]) => purposes.has(p))),
    scopes: Object.fromEntries(Object.entries(wording.scopes).filter(([s]) => scopes.has(s))),
  };
}

/**
 * The labels of the page's own language when it is English: the request says what the rule's description says,
 * the list and the message say it shorter. Another `operator.language`: none (the descriptions are shown).
 */
export function demoLabels(config: DemoConfig): PageLabels | undefined {
  const language = config.operator.language ?? 'en';
  if (language.toLowerCase().split('-')[0] !== 'en') return undefined;
  const scopes: Record<string, LabelWording> = {};
  for (const rule of config.consentPolicy) {
    const short = ENGLISH_SHORT[rule.scope];
    if (short && rule.description !== undefined) scopes[rule.scope] = { request: rule.description, ...short };
  }
  const purposes = Object.fromEntries(
    Object.entries(ENGLISH_PURPOSES).filter(([p]) => config.consentPolicy.some((r) => r.purpose === p)),
  );
  return { purposes, scopes };
}

/** The languages the config asks for beyond the page's own, with the demo's wording. */
export function demoLanguages(config: DemoConfig): Record<string, PageLanguageOptions> {
  const own = (config.operator.language ?? 'en').toLowerCase();
  const languages: Record<string, PageLanguageOptions> = {};
  for (const language of config.operator.languages ?? []) {
    if (language === own) continue;
    languages[language] = { texts: SPANISH_TEXTS, labels: forRules(config, SPANISH_LABELS) };
  }
  return languages;
}
