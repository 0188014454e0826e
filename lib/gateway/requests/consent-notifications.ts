import { hashedRecordId, sha256 } from '../../crypto.js';
import type { Store } from '../../stores/store.js';
import type { BackchannelRecord } from './backchannel-requests.js';

/**
 * CIBA consent notifications, one per (client, subscriber, purpose, scope) while it is pending (docs/consent.md):
 * a client that asks again, or fifty times at once, does not have the subscriber's phone buzz again.
 *
 * Each request still gets an auth_req_id of its own, bound to the one notification: consent is recorded per
 * (client, subscriber, purpose, scope), so the subscriber's one answer decides every request waiting on it at its
 * next poll. Handing out the pending auth_req_id again instead would have two callers poll for one token (one of
 * them then told invalid_grant) and would tie a new request to an old one's expiry and approval.
 *
 * The notification on record names the request that sent it. It is pending while that request is: not yet
 * exchanged for a token, not refused, not expired (the record lives as long as the request), and not answered by a
 * refusal since. Once it is not, the next request sends a new one, exactly once.
 */

interface NotificationRecord {
  /** The request that sent it, by the id its record is stored under (the auth_req_id's hash, never the id). */
  request: string;
  sentAt: number;
  [key: string]: string | number;
}

/** In the backchannel records, beside the requests: `|` never occurs in an auth_req_id (base64url). */
function notificationId(record: BackchannelRecord): string {
  const tuple = JSON.stringify([
    record.clientId,
    record.subscriberId,
    record.purpose,
    [...record.consentScopes].sort(),
  ]);
  return `notify|${sha256(tuple)}`;
}

async function pending(
  store: Store,
  notification: NotificationRecord,
  now: number,
  deniedAt: number | undefined,
): Promise<boolean> {
  if (deniedAt !== undefined && deniedAt >= notification.sentAt) return false;
  const sender = await store.get<BackchannelRecord>('backchannel', notification.request);
  return sender !== undefined && !sender.consumed && sender.value.status !== 'denied' && sender.value.expiresAt > now;
}

/**
 * Whether this request is the one to notify the subscriber: true for exactly one of any number of concurrent
 * requests for the same tuple while none is pending. `deniedAt`: when consent for the tuple was last refused.
 */
export async function claimConsentNotification(
  store: Store,
  now: number,
  authReqId: string,
  record: BackchannelRecord,
  deniedAt: number | undefined,
): Promise<boolean> {
  const id = notificationId(record);
  const mine: NotificationRecord = { request: hashedRecordId(authReqId), sentAt: now };
  const ttl = Math.max(1, Math.ceil((record.expiresAt - now) / 1000));
  if (await store.add('backchannel', id, mine, { ttl })) return true;
  const current = await store.get<NotificationRecord>('backchannel', id);
  // Gone meanwhile (expired): as if none had been sent.
  if (!current) return store.add('backchannel', id, mine, { ttl });
  // Consumed: another request is replacing an answered notification right now, and sends the new one.
  if (current.consumed || (await pending(store, current.value, now, deniedAt))) return false;
  // Answered or over: of the requests that see it so, the one that consumes it sends the next notification.
  if (!(await store.consume('backchannel', id))) return false;
  await store.put('backchannel', id, mine, { ttl });
  return true;
}
