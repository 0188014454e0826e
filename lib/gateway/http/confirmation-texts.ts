/**
 * The wording of the confirmation step (a consent rule with `confirmation: 'required'`): part of
 * `consentPage.texts`, so it is translated and replaced like the rest of the page.
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
};
