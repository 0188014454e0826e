import { randomBytes } from 'node:crypto';
import { StaticClientRegistry, verifyClientSecret, type ClientRegistry, type RegisteredClient } from '../../registry/clients.js';
import type { Verified } from './method.js';

/** The decoy while only plain and `sha256:` secrets are known: one SHA-256, cached like a real client's digest. */
const SHA256_DECOY: RegisteredClient = { clientId: '', grantTypes: [], scopes: [], clientSecret: '\0' };

/**
 * What an unknown client id is compared against, one per registry: a registration whose check costs what a
 * registered client's does, so unknown ids are not told apart by timing. Plain and `sha256:` secrets cost one
 * SHA-256 (the digest of the registered side is cached); a `scrypt:` hash costs an scrypt derivation, which the
 * decoy then repeats with the same parameters: a random salt and key of the registered hash's lengths (N, r and
 * p are fixed by `verifyClientSecret`). With both kinds registered the decoy costs what scrypt does, so an
 * unknown id answers like a scrypt-registered one, and a sha256-registered id still answers faster (its secret
 * is a generated, high-entropy one; client ids are not secrets, RFC 6749 §2.2).
 *
 * The kinds come from the registrations seen: all of a StaticClientRegistry's at once, and every client a
 * custom registry returns as it is looked up.
 */
class Decoy {
  registration: RegisteredClient = SHA256_DECOY;
  private readonly seen = new WeakSet<RegisteredClient>();

  learn(client: RegisteredClient): void {
    if (this.registration !== SHA256_DECOY || this.seen.has(client)) return;
    this.seen.add(client);
    const [algorithm, salt, key] = client.clientSecretHash?.split(':') ?? [];
    if (algorithm !== 'scrypt' || !salt || !key) return;
    const like = (encoded: string) => randomBytes(Buffer.from(encoded, 'base64url').length).toString('base64url');
    this.registration = { clientId: '', grantTypes: [], scopes: [], clientSecretHash: `scrypt:${like(salt)}:${like(key)}` };
  }
}

const decoys = new WeakMap<ClientRegistry, Decoy>();

/** The registration an unknown client id of this registry is compared against. */
export function decoyFor(clients: ClientRegistry): RegisteredClient {
  return decoyOf(clients).registration;
}

function decoyOf(clients: ClientRegistry): Decoy {
  let decoy = decoys.get(clients);
  if (decoy === undefined) {
    decoy = new Decoy();
    decoys.set(clients, decoy);
    if (clients instanceof StaticClientRegistry) for (const client of clients.list()) decoy.learn(client);
  }
  return decoy;
}

/**
 * The secret check shared by client_secret_basic and client_secret_post, against the registration the claimed id
 * found (the authenticator looks it up once per request), or none.
 */
export async function verifySecret(clients: ClientRegistry, client: RegisteredClient | undefined, secret: string): Promise<Verified> {
  const decoy = decoyOf(clients);
  if (!client) {
    // Spend the same work as a real comparison, so unknown ids are not told apart by timing.
    await verifyClientSecret(decoy.registration, secret);
    return {};
  }
  decoy.learn(client);
  return (await verifyClientSecret(client, secret)) ? { client, known: client } : { known: client };
}
