import type { ConsentConfirmationContext, Subscriber } from '../../lib/index.js';

/** One message the operator's channel was asked to send. */
export interface ChannelMessage {
  subscriber: Subscriber;
  code: string;
  context: ConsentConfirmationContext;
}

/**
 * The operator's SMS channel of the tests (`sendConsentConfirmation`): every message it sent, and how the next
 * send fares (`throw`: the channel refuses, quoting the number and code as a real one might; `hang`: it never
 * answers, until the gateway's timeout aborts it).
 */
export function operatorChannel() {
  const messages: ChannelMessage[] = [];
  const state: { fail?: 'throw' | 'hang'; aborted?: boolean } = {};
  const send = async (subscriber: Subscriber, code: string, context: ConsentConfirmationContext) => {
    if (state.fail === 'throw') throw new Error(`SMS gateway refused ${subscriber.phoneNumber}: code ${code}`);
    if (state.fail === 'hang') {
      await new Promise<void>((resolve) =>
        context.signal.addEventListener('abort', () => {
          state.aborted = true;
          resolve();
        }),
      );
      return;
    }
    messages.push({ subscriber, code, context });
  };
  return { messages, state, send, last: () => messages.at(-1)!.code };
}
