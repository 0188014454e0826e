/**
 * The wording of the confirmation step (a consent rule with `confirmation: 'required'`, and the consents page
 * when `sendConsentConfirmation` is configured): part of `consentPage.texts`, so it is translated and replaced
 * like the rest of the page.
 */
export interface ConfirmationTexts {
  /** Heading of the page that asks for the code. `{client}` and `{operator}` are replaced. */
  codeTitle: string;
  /** Under it. `{client}` and `{operator}` are replaced. */
  codeIntro: string;
  /** Label of the code field. */
  codeLabel: string;
  /** Hint under the label. */
  codeHint: string;
  /** The button that submits the code (and allows). */
  confirm: string;
  /** A wrong code, attempts left. `{attempts}` is replaced by their number. */
  wrongCode: string;
  /** Something other than the code's digits. */
  malformedCode: string;
  /** Heading of the page shown when the code could not be sent. */
  sendFailedTitle: string;
  /** Its text. `{client}` and `{operator}` are replaced. */
  sendFailed: string;
  /** Its button that sends a new code. */
  resend: string;
  /** Under the code page's heading on the consents page. `{operator}` is replaced. */
  consentsCodeIntro: string;
  /** Heading of the consents page before a code is sent. `{operator}` is replaced. */
  consentsSendTitle: string;
  /** The consents page's text before a code is sent: what it is for. `{operator}` is replaced. */
  consentsSendIntro: string;
  /** The consents page's button that sends the first code. */
  sendCode: string;
  /** The consents page's text when the code could not be sent. `{operator}` is replaced. */
  consentsSendFailed: string;
  /** The consents page's button that sends a new code. */
  newCode: string;
  /** Heading of the consents page's page when its code cannot be used any more (wrong too often, expired). */
  codeEndedTitle: string;
  /** Its text. `{operator}` is replaced. */
  codeEnded: string;
  /** Heading of the page shown when the subscriber was sent as many codes as `codesPerSubscriber` allows. */
  codesLimitTitle: string;
  /** Its text. `{operator}` and `{minutes}` (until a code may be sent again) are replaced. */
  codesLimit: string;
  /**
   * The text message that carries a consent's code (`context.message` of `sendConsentConfirmation`):
   * `{operator}`, `{client}`, `{scopes}` (the scopes' `message` labels), `{purpose}` (the purpose's) and `{minutes}`
   * are replaced; `{code}` is left for the hook, which puts the code there.
   */
  consentMessage: string;
  /** The same for the consents page's code: `{operator}` and `{minutes}` are replaced, `{code}` is left. */
  consentsMessage: string;
}

export const CONFIRMATION_TEXTS: ConfirmationTexts = {
  codeTitle: 'Enter the code {operator} sent to your phone',
  codeIntro:
    '{operator} sent you a code in a text message. Type it here to allow {client}. No one from {operator} will ask you for it.',
  codeLabel: 'Confirmation code',
  codeHint: '6 digits, from the message on your phone',
  confirm: 'Confirm',
  wrongCode: 'That code is not right. Attempts left: {attempts}.',
  malformedCode: 'Type the 6 digits of the code.',
  sendFailedTitle: 'The confirmation code could not be sent',
  sendFailed:
    '{operator} could not send the code to your phone just now. Nothing was shared with {client}. Send the code again, or deny.',
  resend: 'Send the code again',
  consentsCodeIntro:
    '{operator} sent you a code in a text message. Type it here to see your consents. No one from {operator} will ask you for it.',
  consentsSendTitle: 'A code to see your consents',
  consentsSendIntro:
    'To show your consents, {operator} first sends a code to your phone in a text message. You type it on the next page.',
  sendCode: 'Send me a code',
  consentsSendFailed: '{operator} could not send the code to your phone just now. Nothing was shown or changed.',
  newCode: 'Send a new code',
  codeEndedTitle: 'This code cannot be used any more',
  codeEnded:
    'The code expired, or a wrong code was typed too many times. Ask for a new code: {operator} sends it to your phone.',
  codesLimitTitle: 'Too many codes were sent to your phone',
  codesLimit: '{operator} sent several codes to your phone in the last minutes. Wait {minutes} min, then try again.',
  consentMessage:
    '{operator}: your code is {code}. Type it to allow {client} to {scopes}. It expires in {minutes} min. Never share it.',
  consentsMessage:
    '{operator}: your code is {code}. Type it to see your consents. It expires in {minutes} min. Never share it.',
};
