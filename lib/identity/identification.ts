import type { LoginHint } from './login-hint.js';

/**
 * How the subscriber of a grant was identified, recorded on every record of the grant:
 * - `network`: by the mobile network, the device's address (with its source port behind CGNAT) on the connection
 *   (authorization code flow);
 * - `operatortoken`: by a GSMA TS.43 operator token the operator issued to the device after authenticating its SIM
 *   (`login_hint=operatortoken:…`, or a JWT-bearer assertion's `sub`);
 * - `tel`, `ipport`: by a phone number or an address the client supplied (a CIBA `login_hint`, a JWT-bearer
 *   assertion's `sub`, or the hint that names a line in sandbox mode): nothing proved the device is there.
 */
export type SubscriberIdentification = 'network' | 'operatortoken' | 'tel' | 'ipport';

/** How a hint the client sent identifies the subscriber. */
export function identificationOfHint(hint: LoginHint): SubscriberIdentification {
  return hint.type;
}

/**
 * Whether the identification rests on the network's (or the SIM's) authentication of the device, as Number
 * Verification requires ("network-based or SIM-based authentication"), rather than on what the client says.
 */
export function isNetworkAuthentication(identifiedBy: SubscriberIdentification): boolean {
  return identifiedBy === 'network' || identifiedBy === 'operatortoken';
}

/**
 * The `amr` (RFC 8176) of a grant's ID token, introspection and JWT access token. RFC 8176 has no value for
 * identification by the mobile network; `hwk` (proof of possession of a hardware-secured key) is the closest: the
 * network admits a device, and the entitlement server issues an operator token, only after 3GPP AKA proves
 * possession of the subscriber key in the SIM/eSIM. A hint the client supplied proves nothing of the kind and no
 * RFC 8176 value fits it: `hint` (OIDC Core §2 lets the parties agree on values) says the subscriber was named,
 * not authenticated. docs/protocol.md has the table.
 */
export function amrOf(identifiedBy: SubscriberIdentification): string[] {
  return isNetworkAuthentication(identifiedBy) ? ['hwk'] : ['hint'];
}

const KINDS: ReadonlySet<string> = new Set<SubscriberIdentification>(['network', 'operatortoken', 'tel', 'ipport']);

/** A stored or signed value read back: the kind, or undefined for anything else (records of older versions). */
export function readIdentification(value: unknown): SubscriberIdentification | undefined {
  return typeof value === 'string' && KINDS.has(value) ? (value as SubscriberIdentification) : undefined;
}
