import type { ClientRegistry } from '../../registry/clients.js';
import type { ClientAuthMethodModule } from './method.js';
import { verifySecret } from './client-secret.js';

/** RFC 6749 §2.3.1 `client_secret_post`: `client_id` and `client_secret` in the form body. */
export function clientSecretPost(clients: ClientRegistry): ClientAuthMethodModule {
  return {
    method: 'client_secret_post',
    presentedIn: (_req, params) => params.has('client_secret'),
    claim: (_req, params) => {
      const clientId = params.get('client_id');
      return clientId === undefined ? { failure: 'missing' } : { clientId };
    },
    verify: (_req, _res, params, registered) => verifySecret(clients, registered, params.require('client_secret')),
  };
}
