import { createHash, randomBytes } from 'node:crypto';

/** `sub` for a client: pairwise, so two clients cannot correlate a subscriber by it. */
export type PairwiseSubject = (clientId: string, subscriberId: string) => string;

/**
 * OpenID Connect Core §8.1 pairwise identifiers: base64url(SHA-256(clientId + subscriberId + salt)).
 * The subscriber id is the operator's opaque id, never the phone number; the salt keeps a client that
 * knows (or guesses) subscriber ids from computing other clients' values.
 *
 * Without a configured salt a random one is drawn per process (the start-up checks warn): the values then
 * change on restart and differ between instances.
 */
export function createPairwiseSubject(salt: string | undefined): PairwiseSubject {
  if (salt !== undefined && salt.length === 0) throw new TypeError('pairwiseSalt must not be empty');
  const effective = salt ?? randomBytes(32).toString('base64url');
  return (clientId, subscriberId) =>
    createHash('sha256')
      .update(clientId + subscriberId + effective, 'utf8')
      .digest('base64url');
}
