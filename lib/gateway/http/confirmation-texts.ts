import type { ConfirmationTexts } from '../options.js';

/** The confirmation step's default (English) wording: `ConfirmationTexts`, in options.ts, says what each is. */
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
