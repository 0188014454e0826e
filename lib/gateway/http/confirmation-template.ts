import { escapeHtml, fill, footer, layout, whatIsAsked, type ConsentPageConfig } from './consent-template.js';

/**
 * The confirmation step's pages (docs/consent.md): the page that asks for the code the operator sent, and the
 * page shown when it could not be sent, for the consent page and for the consents page; the page that asks to
 * wait when the subscriber's cap of codes is reached. Same layout, branding and form as the consent page: no
 * scripts, a labelled field, errors announced to screen readers, Deny always there on the consent page.
 */

/** The previous code was refused: why. */
export type CodeProblem = { kind: 'wrong'; attemptsLeft: number } | { kind: 'malformed' };

export interface CodeView {
  clientName: string;
  /** Plain-words purpose, as on the consent page. */
  purpose: string;
  /** What the consent gives access to, as on the consent page. */
  scopes: { scope: string; description: string | undefined }[];
  interaction: string;
  csrf: string;
  problem?: CodeProblem;
}

function hiddenFields(view: { interaction: string; csrf: string }): string {
  return `<input type="hidden" name="interaction" value="${escapeHtml(view.interaction)}">
<input type="hidden" name="csrf" value="${escapeHtml(view.csrf)}">`;
}

/** The labelled code field, with the previous code's problem announced. */
function codeField(c: ConsentPageConfig, values: Record<string, string>, problem: CodeProblem | undefined): string {
  const error =
    problem === undefined
      ? ''
      : `<p id="code-error" class="error" role="alert">${escapeHtml(
          problem.kind === 'wrong'
            ? fill(c.texts.wrongCode, { ...values, attempts: String(problem.attemptsLeft) })
            : c.texts.malformedCode,
        )}</p>\n`;
  const describedBy = problem === undefined ? 'code-hint' : 'code-hint code-error';
  const invalid = problem === undefined ? '' : ' aria-invalid="true"';
  return `<label for="code">${escapeHtml(c.texts.codeLabel)}</label>
<p id="code-hint" class="hint">${escapeHtml(c.texts.codeHint)}</p>
${error}<input id="code" class="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="12" required spellcheck="false" aria-describedby="${describedBy}"${invalid}>`;
}

/** The page that asks for the code. */
export function renderCodePage(c: ConsentPageConfig, nonce: string, view: CodeView): string {
  const values = { client: view.clientName, operator: c.operatorName };
  const title = fill(c.texts.codeTitle, values);
  const body = `<h1 id="title">${escapeHtml(title)}</h1>
<p>${escapeHtml(fill(c.texts.codeIntro, values))}</p>
${whatIsAsked(c, view)}
<form method="post" action="consent" aria-labelledby="title">
${hiddenFields(view)}
${codeField(c, values, view.problem)}
<div class="actions">
<button type="submit" class="allow" name="decision" value="allow">${escapeHtml(c.texts.confirm)}</button>
<button type="submit" class="deny" name="decision" value="deny" formnovalidate>${escapeHtml(c.texts.deny)}</button>
</div>
</form>
${footer(c, values)}`;
  return layout(c, nonce, title, body);
}

/** The page shown when `sendConsentConfirmation` failed: nothing is lost, the subscriber may send again or deny. */
export function renderSendFailedPage(
  c: ConsentPageConfig,
  nonce: string,
  view: { clientName: string; interaction: string; csrf: string },
): string {
  const values = { client: view.clientName, operator: c.operatorName };
  const title = fill(c.texts.sendFailedTitle, values);
  const body = `<h1 id="title">${escapeHtml(title)}</h1>
<p role="alert">${escapeHtml(fill(c.texts.sendFailed, values))}</p>
<form method="post" action="consent" aria-labelledby="title">
${hiddenFields(view)}
<div class="actions">
<button type="submit" class="allow" name="decision" value="allow">${escapeHtml(c.texts.resend)}</button>
<button type="submit" class="deny" name="decision" value="deny">${escapeHtml(c.texts.deny)}</button>
</div>
</form>
${footer(c, values)}`;
  return layout(c, nonce, title, body);
}

/** The consents page's code page: the code opens the subscriber's list. */
export function renderConsentsCodePage(
  c: ConsentPageConfig,
  nonce: string,
  view: { csrf: string; problem?: CodeProblem },
): string {
  const values = { operator: c.operatorName };
  const title = fill(c.texts.codeTitle, values);
  const body = `<h1 id="title">${escapeHtml(title)}</h1>
<p>${escapeHtml(fill(c.texts.consentsCodeIntro, values))}</p>
<form method="post" action="consents" aria-labelledby="title">
<input type="hidden" name="csrf" value="${escapeHtml(view.csrf)}">
${codeField(c, values, view.problem)}
<div class="actions">
<button type="submit" class="allow">${escapeHtml(c.texts.confirm)}</button>
</div>
</form>`;
  return layout(c, nonce, title, body);
}

/** The form that asks the operator to send the consents page's code: a POST of this page, never a link. */
function sendForm(csrf: string, label: string): string {
  return `<form method="post" action="consents" aria-labelledby="title">
<input type="hidden" name="csrf" value="${escapeHtml(csrf)}">
<input type="hidden" name="send" value="code">
<div class="actions">
<button type="submit" class="allow">${escapeHtml(label)}</button>
</div>
</form>`;
}

/**
 * The consents page before any code is out: what the code is for, and the button that sends it. Opening the
 * page sends nothing (another site can make a browser open it); only this form, posted from the page, does.
 */
export function renderConsentsSendPage(c: ConsentPageConfig, nonce: string, view: { csrf: string }): string {
  const values = { operator: c.operatorName };
  const title = fill(c.texts.consentsSendTitle, values);
  const body = `<h1 id="title">${escapeHtml(title)}</h1>
<p>${escapeHtml(fill(c.texts.consentsSendIntro, values))}</p>
${sendForm(view.csrf, c.texts.sendCode)}`;
  return layout(c, nonce, title, body);
}

/**
 * A page of the consents page's code that ends in a way out: a new code (the page's own form, as above).
 * `kind`: the code could not be sent, or it cannot be used any more.
 */
export function renderConsentsCodeEndPage(
  c: ConsentPageConfig,
  nonce: string,
  kind: 'send_failed' | 'ended',
  csrf: string,
): string {
  const values = { operator: c.operatorName };
  const title = kind === 'send_failed' ? c.texts.sendFailedTitle : c.texts.codeEndedTitle;
  const text = kind === 'send_failed' ? c.texts.consentsSendFailed : c.texts.codeEnded;
  const body = `<h1 id="title">${escapeHtml(fill(title, values))}</h1>
<p role="alert">${escapeHtml(fill(text, values))}</p>
${sendForm(csrf, c.texts.newCode)}`;
  return layout(c, nonce, fill(title, values), body);
}

/** The subscriber was sent as many codes as the cap allows: how long to wait. Nothing else is said or offered. */
export function renderCodesLimitPage(c: ConsentPageConfig, nonce: string, retryAfter: number): string {
  const values = { operator: c.operatorName, minutes: String(Math.max(1, Math.ceil(retryAfter / 60))) };
  const title = fill(c.texts.codesLimitTitle, values);
  const body = `<h1>${escapeHtml(title)}</h1>
<p role="alert">${escapeHtml(fill(c.texts.codesLimit, values))}</p>`;
  return layout(c, nonce, title, body);
}
