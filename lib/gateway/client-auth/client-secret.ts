import { verifyClientSecret, type ClientRegistry, type RegisteredClient } from '../../registry/clients.js';
import type { Verified } from './method.js';

/**
 * Compared against when the client id is unknown. One shared registration, so its digest is cached like a
 * real client's and an unknown id costs exactly what a known one does (one hash of the presented secret).
 */
const DECOY_CLIENT: RegisteredClient = { clientId: '', grantTypes: [], scopes: [], clientSecret: '\0' };

/** The secret check shared by client_secret_basic and client_secret_post. */
export async function verifySecret(clients: ClientRegistry, clientId: string, secret: string): Promise<Verified> {
  const client = await clients.find(clientId);
  if (!client) {
    // Spend the same work as a real comparison, so unknown ids are not told apart by timing.
    await verifyClientSecret(DECOY_CLIENT, secret);
    return {};
  }
  return (await verifyClientSecret(client, secret)) ? { client, known: client } : { known: client };
}
