import type { ConsentEvidence } from '../../consent/registry.js';
import { type ConsentPageConfig, escapeHtml, fill, layout } from './consent-template.js';

/**
 * The HTML of the subscriber's consents page: each consent on record (application, purpose, scope, date) with a
 * Withdraw button, one form per consent so the page works without JavaScript. Branded as the consent page.
 */

export interface ConsentItem {
  clientId: string;
  clientName: string;
  /** DPV purpose, as recorded. */
  purpose: string;
  /** Plain-words purpose. */
  purposeText: string;
  scope: string;
  /** The policy's plain words for the scope, or the scope. */
  scopeText: string;
  decidedAt: number;
  /** How it was given, when the record says. */
  evidence?: ConsentEvidence;
}

export interface ConsentsView {
  items: ConsentItem[];
  csrf: string;
  /** The application whose consent was just withdrawn, for the status message. */
  withdrawn: string | undefined;
}

const STYLES = `
.consents { list-style: none; padding: 0; margin: 1.5rem 0 0; }
.consents li { border: 1px solid currentColor; border-radius: 0.5rem; padding: 0.75rem 1rem; margin-bottom: 1rem; }
.consents h2 { margin-top: 0; }
.consents p { margin: 0.25rem 0; }
.consents .actions { margin-top: 0.75rem; }
.notice { border-left: 4px solid var(--primary); padding: 0.5rem 0.75rem; font-weight: 600; }
.vh { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
`;

function styles(c: ConsentPageConfig): string {
  return `:root { --primary: ${c.primaryColor}; }${STYLES}`;
}

function date(c: ConsentPageConfig, at: number): string {
  let text: string;
  try {
    text = new Intl.DateTimeFormat(c.language, { dateStyle: 'long', timeZone: 'UTC' }).format(at);
  } catch {
    text = new Date(at).toISOString().slice(0, 10);
  }
  return `<time datetime="${new Date(at).toISOString()}">${escapeHtml(text)}</time>`;
}

const CHANNELS = { sms: 'SMS', push: 'push notification', ussd: 'USSD' } as const;

/** How a consent was given, after its date: "on the consent page, confirmed with a code sent by SMS". */
function how(c: ConsentPageConfig, evidence: ConsentEvidence | undefined): string {
  const t = c.texts;
  const values = { operator: c.operatorName };
  switch (evidence?.method) {
    case 'page':
      return ` ${fill(t.consentsViaPage, values)}`;
    case 'page_confirmed': {
      const channel = evidence.confirmation?.channel;
      // A channel this version does not know (from an outside registry) reads as the operator's.
      const by =
        channel !== undefined && Object.hasOwn(CHANNELS, channel)
          ? CHANNELS[channel as keyof typeof CHANNELS]
          : c.operatorName;
      return ` ${fill(t.consentsViaPage, values)}, ${t.consentsConfirmed.replace('{channel}', () => by)}`;
    }
    case 'out_of_band':
      return ` ${fill(t.consentsViaOperator, values)}`;
    case 'registry':
      return ` ${fill(t.consentsViaRegistry, values)}`;
    default:
      return '';
  }
}

function item(c: ConsentPageConfig, view: ConsentsView, consent: ConsentItem, i: number): string {
  const label = `${consent.clientName}: ${consent.scopeText}`;
  return `<li aria-labelledby="consent-${i}">
<h2 id="consent-${i}">${escapeHtml(consent.clientName)}</h2>
<p>${escapeHtml(c.texts.purposeLabel)}: ${escapeHtml(consent.purposeText)}</p>
<p>${escapeHtml(c.texts.scopeLabel)}: ${escapeHtml(consent.scopeText)}</p>
<p>${escapeHtml(c.texts.consentsGiven)} ${date(c, consent.decidedAt)}${escapeHtml(how(c, consent.evidence))}</p>
<form method="post" action="consents">
<input type="hidden" name="csrf" value="${escapeHtml(view.csrf)}">
<input type="hidden" name="client_id" value="${escapeHtml(consent.clientId)}">
<input type="hidden" name="purpose" value="${escapeHtml(consent.purpose)}">
<input type="hidden" name="scope" value="${escapeHtml(consent.scope)}">
<div class="actions">
<button type="submit" class="deny">${escapeHtml(c.texts.withdraw)}<span class="vh"> (${escapeHtml(label)})</span></button>
</div>
</form>
</li>`;
}

export function renderConsentsPage(c: ConsentPageConfig, nonce: string, view: ConsentsView): string {
  const values = { operator: c.operatorName };
  const notice =
    view.withdrawn === undefined
      ? ''
      : `\n<p class="notice" role="status">${escapeHtml(fill(c.texts.withdrawn, { ...values, client: view.withdrawn }))}</p>`;
  const list =
    view.items.length === 0
      ? `<p>${escapeHtml(c.texts.consentsEmpty)}</p>`
      : `<ul class="consents">\n${view.items.map((consent, i) => item(c, view, consent, i)).join('\n')}\n</ul>`;
  const privacy =
    c.privacyPolicyUrl === undefined
      ? ''
      : `\n<footer><p><a href="${escapeHtml(c.privacyPolicyUrl)}" rel="noreferrer">${escapeHtml(c.operatorName)} privacy notice</a></p></footer>`;
  const body = `<h1>${escapeHtml(c.texts.consentsTitle)}</h1>
<p>${escapeHtml(fill(c.texts.consentsIntro, values))}</p>${notice}
${list}${privacy}`;
  return layout(c, nonce, c.texts.consentsTitle, body, styles(c));
}

/** For a request the network does not identify: what to do, and nothing about anyone's consents. */
export function renderNotIdentifiedPage(c: ConsentPageConfig, nonce: string): string {
  const title = c.texts.notIdentifiedTitle;
  const body = `<h1>${escapeHtml(title)}</h1>
<p>${escapeHtml(fill(c.texts.notIdentified, { operator: c.operatorName }))}</p>`;
  return layout(c, nonce, title, body);
}
