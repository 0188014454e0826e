import type { Request } from 'express';
import {
  StaticClientRegistry,
  verifyClientSecret,
  type ClientRegistry,
  type RegisteredClient,
  type SecretRequester,
} from '../../registry/clients.js';
import { scryptLimiter } from '../../registry/scrypt.js';
import { secretHistory } from '../../registry/secret-history.js';
import { addressKey } from '../../ops/rate-limits.js';
import type { Verified } from './method.js';

/**
 * What an unknown client id costs, one per registry, so unknown ids are not told apart by timing: one SHA-256
 * while only plain and `sha256:` secrets are known (the digest of the registered side is cached), and once a
 * `scrypt:` hash is known, a timer as long as a real scrypt check (`scryptLimiter.decoy()`): the answer takes
 * what a scrypt-registered id's does, at no CPU cost, so unknown ids cannot buy thread-pool work. A
 * sha256-registered id in a registry that holds both kinds still answers faster (its secret is a generated,
 * high-entropy one; client ids are not secrets, RFC 6749 §2.2).
 *
 * The kinds come from the registrations seen: all of a StaticClientRegistry's at once, and every client a
 * custom registry returns as it is looked up.
 */
class Decoy {
  kind: 'sha256' | 'scrypt' = 'sha256';

  /** Looked at on every record, not once per object: a registry may edit a record it returned (a new hash). */
  learn(client: RegisteredClient): void {
    if (this.kind === 'sha256' && client.clientSecretHash?.startsWith('scrypt:')) this.kind = 'scrypt';
  }
}

/**
 * Where a secret check comes from, read only for a scrypt check's rank or a failure: `req.ip` parses X-Forwarded-For,
 * on every request otherwise. A class, not an object literal with a getter: with that literal (holding the request)
 * each young-generation GC promoted a third more and took twice as long, half the flow's GC (bench/README.md).
 */
class Requester implements SecretRequester {
  constructor(private readonly req: Pick<Request, 'ip'>) {}

  get address(): string {
    return addressKey(this.req.ip);
  }
}

/** The decoy while only plain and `sha256:` secrets are known: one SHA-256, cached like a real client's digest. */
const SHA256_DECOY: RegisteredClient = { clientId: '', grantTypes: [], scopes: [], clientSecret: '\0' };

const decoys = new WeakMap<ClientRegistry, Decoy>();

/** What an unknown client id of this registry costs: one SHA-256, or a scrypt check's time on a timer. */
export function decoyKind(clients: ClientRegistry): 'sha256' | 'scrypt' {
  return decoyOf(clients).kind;
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
 * found (the authenticator looks it up once per request), or none. `claimed` is the id the credentials name and the
 * address they come from: an unknown id's decoy is ranked and remembered as a real check of that id would be.
 */
export async function verifySecret(
  clients: ClientRegistry,
  /** The id the credentials name, and the request they came in (its address is read only when it counts). */
  claimed: { clientId: string; req: Pick<Request, 'ip'> },
  client: RegisteredClient | undefined,
  secret: string,
): Promise<Verified> {
  const decoy = decoyOf(clients);
  const requester = new Requester(claimed.req);
  if (!client || (client.clientSecret === undefined && client.clientSecretHash === undefined)) {
    // As long as a real comparison, so unknown ids (and clients that have no secret: private_key_jwt ones) are not
    // told apart by timing, nor by their place in the scrypt queue.
    if (decoy.kind === 'scrypt') {
      await scryptLimiter.decoy(secretHistory.rank(claimed.clientId, requester.address));
      secretHistory.rememberFailure(claimed.clientId, requester.address);
    } else {
      await verifyClientSecret(SHA256_DECOY, secret);
    }
    return client ? { known: client } : {};
  }
  decoy.learn(client);
  return (await verifyClientSecret(client, secret, requester)) ? { client, known: client } : { known: client };
}
