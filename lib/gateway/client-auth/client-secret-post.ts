import type { ClientRegistry } from '../../registry/clients.js';
import type { ClientAuthMethodModule } from './method.js';
import { verifySecret } from './client-secret.js';

/** RFC 6749 §2.3.1 `client_secret_post`: `client_id` and `client_secret` in the form body. */
export function clientSecretPost(clients: ClientRegistry): ClientAuthMethodModule {
  return {
    method: 'client_secret_post',
    presentedIn: (_req, params) => params.has('client_secret'),
    authenticate: async (req, _res, params, attempt) => {
      const clientId = params.get('client_id');
      if (clientId === undefined) return { failure: 'missing' };
      const secret = params.require('client_secret');
      return attempt(clientId, (registered) => verifySecret(clients, { clientId, req }, registered, secret));
    },
  };
}
