import { checkRegistration, StaticClientRegistry, type ClientRegistry, type RegisteredClient } from './clients.js';
import type { JwksDestinations } from './jwks-destination.js';
import { CLIENT_AUTH_METHOD_DEFAULT } from '../defaults.js';

/** Why a registration was refused: its client id, the field at fault, and the check's words (never a secret). */
export interface RegistrationRefusal {
  clientId: string;
  field: string;
  reason: string;
}

/** Registration fields, as the checks' messages name them (`redirect URI` is how one of `redirectUris` is named). */
const FIELD_NAMES: ReadonlyArray<[string, string]> = [
  ...[
    'clientId',
    'name',
    'clientSecretHash',
    'clientSecret',
    'redirectUris',
    'grantTypes',
    'scopes',
    'tokenEndpointAuthMethod',
    'jwksUri',
    'jwks',
    'signingAlgorithms',
    'requireSignedRequestObject',
    'requirePkce',
    'dpopBoundAccessTokens',
  ].map((field): [string, string] => [field, field]),
  ['redirect URI', 'redirectUris'],
  ['private_key_jwt', 'tokenEndpointAuthMethod'],
];

/** The registration field a check's message (`client <id>: ...`) names first; `registration` when none. */
function fieldOf(clientId: string, message: string): string {
  const prefix = `client ${clientId}: `;
  const rest = message.startsWith(prefix) ? message.slice(prefix.length) : message;
  let found: { at: number; field: string } | undefined;
  for (const [words, field] of FIELD_NAMES) {
    const at = rest.indexOf(words);
    if (at >= 0 && (found === undefined || at < found.at)) found = { at, field };
  }
  return found?.field ?? 'registration';
}

/**
 * What a profile requires of every record, whichever registry holds it (`profile: 'camara'`: the CAMARA Security and
 * Interoperability Profile's `private_key_jwt`). A static list is held to it at start-up; a custom registry's
 * records as they are found. The message names the profile's rule and the record's method, never a secret.
 */
export function checkProfile(client: RegisteredClient, profile: 'camara' | undefined): void {
  if (profile !== 'camara') return;
  const method = client.tokenEndpointAuthMethod ?? CLIENT_AUTH_METHOD_DEFAULT;
  if (method !== 'private_key_jwt') {
    throw new TypeError(
      `client ${client.clientId}: profile 'camara' requires private_key_jwt, and this client uses ${method}; ` +
        "register its public keys (jwks or jwksUri) with tokenEndpointAuthMethod: 'private_key_jwt'",
    );
  }
}

/** Every check of a registration: the static list's, the `jwksUri` destination policy's, and the profile's. */
function refusalOf(
  client: RegisteredClient,
  destinations: JwksDestinations,
  profile: 'camara' | undefined,
): RegistrationRefusal | undefined {
  try {
    checkRegistration(client);
    if (typeof client.jwksUri === 'string') destinations.check(client.clientId, client.jwksUri);
    checkProfile(client, profile);
    return undefined;
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    const clientId = typeof client?.clientId === 'string' ? client.clientId : '';
    return { clientId, field: fieldOf(clientId, error.message), reason: error.message };
  }
}

/**
 * A static list's registrations against the `jwksUri` destination policy, at start-up (its other checks ran when it
 * was built): a `jwksUri` that is not `https:` or names an internal address literal is a start-up error.
 */
export function checkStaticDestinations(registry: StaticClientRegistry, destinations: JwksDestinations): void {
  for (const client of registry.list())
    if (client.jwksUri !== undefined) destinations.check(client.clientId, client.jwksUri);
}

/**
 * Any other `ClientRegistry` (the operator's developer portal): each record it finds passes the checks a static
 * registration passes at start-up, the `jwksUri` destination policy, and the profile's rules, before the gateway
 * uses it. A record that fails is no client (`invalid_client`, the error page at /authorize) and is reported once.
 * The verdict is kept per client id and the record's content, never per object: a registry that edits a record
 * it returned (a rotated secret, new keys) has the edited record judged again at its next lookup.
 */
export class CheckedClientRegistry implements ClientRegistry {
  private readonly byContent = new Map<string, { source: string; refusal: RegistrationRefusal | null }>();
  readonly authMethods: ClientRegistry['authMethods'];
  readonly grantTypes: ClientRegistry['grantTypes'];

  constructor(
    private readonly registry: ClientRegistry,
    private readonly destinations: JwksDestinations,
    private readonly onRefused: (refusal: RegistrationRefusal) => void,
    private readonly profile: 'camara' | undefined = undefined,
  ) {
    this.authMethods = registry.authMethods;
    this.grantTypes = registry.grantTypes;
  }

  async find(clientId: string): Promise<RegisteredClient | undefined> {
    const client = await this.registry.find(clientId);
    if (client === undefined) return undefined;
    return this.verdict(client) === null ? client : undefined;
  }

  private verdict(client: RegisteredClient): RegistrationRefusal | null {
    const source = JSON.stringify(client) ?? '';
    const id = typeof client?.clientId === 'string' ? client.clientId : '';
    const cached = this.byContent.get(id);
    if (cached?.source === source) return cached.refusal;
    const refusal = refusalOf(client, this.destinations, this.profile) ?? null;
    this.byContent.set(id, { source, refusal });
    // Reported when the record is first judged, not on every request that names it.
    if (refusal !== null) this.onRefused(refusal);
    return refusal;
  }
}

/**
 * The registry the gateway uses: a static list checked whole at start-up (and frozen there, so what was checked is
 * what is used), any other checked record by record, against the profile too.
 */
export function checkedRegistry(
  registry: ClientRegistry,
  destinations: JwksDestinations,
  onRefused: (refusal: RegistrationRefusal) => void,
  profile: 'camara' | undefined = undefined,
): ClientRegistry {
  if (registry instanceof StaticClientRegistry) {
    checkStaticDestinations(registry, destinations);
    return registry;
  }
  return new CheckedClientRegistry(registry, destinations, onRefused, profile);
}
