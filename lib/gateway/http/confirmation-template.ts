import { escapeHtml, fill, layout, whatIsAsked, type ConsentPageConfig } from './consent-template.js';

/**
 * The confirmation step's pages (docs/consent.md): the page that asks for the code the operator sent, and the
 * page shown when it could not be sent. Same layout, branding and form as the consent page: no scripts, a
 * labelled field, errors announced to screen readers, Deny always there.
 */

export interface CodeView {
  clientName: string;
  /** Plain-words purpose, as on the consent page. */
  purpose: string;
  /** What the consent gives access to, as on the consent page. */
  scopes: { scope: string; description: string | undefined }[];
  interaction: string;
  csrf: string;
  /** The previous code was refused: why. */
  problem?: { kind: 'wrong'; attemptsLeft: number } | { kind: 'malformed' };
}

function hiddenFields(view: { interaction: string; csrf: string }): string {
  return `<input type="hidden" name="interaction" value="${escapeHtml(view.interaction)}">
<input type="hidden" name="csrf" value="${escapeHtml(view.csrf)}">`;
}

function footer(c: ConsentPageConfig, values: Record<string, string>): string {
  return `<footer><p>${escapeHtml(fill(c.texts.footer, values))}</p></footer>`;
}

/** The page that asks for the code. */
export function renderCodePage(c: ConsentPageConfig, nonce: string, view: CodeView): string {
  const values = { client: view.clientName, operator: c.operatorName };
  const title = fill(c.texts.codeTitle, values);
  const problem = view.problem;
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
  const body = `<h1 id="title">${escapeHtml(title)}</h1>
<p>${escapeHtml(fill(c.texts.codeIntro, values))}</p>
${whatIsAsked(c, view)}
<form method="post" action="consent" aria-labelledby="title">
${hiddenFields(view)}
<label for="code">${escapeHtml(c.texts.codeLabel)}</label>
<p id="code-hint" class="hint">${escapeHtml(c.texts.codeHint)}</p>
${error}<input id="code" class="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="12" required spellcheck="false" aria-describedby="${describedBy}"${invalid}>
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
