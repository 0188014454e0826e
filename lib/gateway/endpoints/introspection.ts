import type { Request, Response } from 'express';
import type { ClientAuthenticator } from '../client-auth/authenticator.js';
import type { RequestContext } from '../http/request-context.js';
import { findAccessToken, type AccessTokenFinding } from '../tokens/access-tokens.js';
import { findRefreshToken, type RefreshTokenKeeping } from '../tokens/refresh-tokens.js';
import type { PairwiseSubject } from '../../identity/pairwise-subject.js';
import { amrOf, readIdentification, type SubscriberIdentification } from '../../identity/identification.js';
import { authorizedAtOf } from '../levers/not-before.js';

/** What introspection uses: finding access and refresh tokens, and the issuer and `sub` it answers with. */
export interface IntrospectionCollaborators extends AccessTokenFinding, RefreshTokenKeeping {
  issuer: string;
  pairwiseSubject: PairwiseSubject;
}

/** RFC 7662 §2.2 response for an active token. */
export interface IntrospectionResponse {
  active: true;
  scope: string;
  client_id: string;
  /** Access tokens only (RFC 7662 §2.2 takes it from RFC 6749 §5.1, which types access tokens): `DPoP` for a token bound to a DPoP key (RFC 9449 §6.2), else `Bearer`. */
  token_type?: 'Bearer' | 'DPoP';
  exp: number;
  iat: number;
  /**
   * Pairwise for the asking client, as in its ID tokens: never the phone number or the operator's id. Absent
   * for a two-legged token (client credentials): it has no subscriber.
   */
  sub?: string;
  iss: string;
  /** The DPV purpose the token was granted for. */
  purpose: string;
  /**
   * How the subscriber was identified (`network`, `operatortoken`, or a hint the client supplied: `tel`, `ipport`),
   * and its `amr` as the ID token has it. Absent for a two-legged token, and for grants of earlier versions.
   */
  identified_by?: SubscriberIdentification;
  amr?: string[];
  /** RFC 9449 §6.2: the thumbprint of the DPoP key a bound token is bound to. */
  cnf?: { jkt: string };
}

/** What introspection reads of either kind of token: who, for what, when. */
interface Introspected {
  clientId: string;
  subscriberId: string | null;
  scope: string;
  purpose: string;
  issuedAt: number;
  expiresAt: number;
  identifiedBy?: unknown;
  /** An access token's DPoP key thumbprint, if bound. */
  jkt?: string | null;
}

/** The live access token (the guard's own lookup) or refresh token, in the order the hint suggests (§2.1). */
async function find(
  ctx: IntrospectionCollaborators,
  token: string,
  hint: string | undefined,
): Promise<{ record: Introspected; refresh: boolean } | undefined> {
  const access = async () => {
    const record = await findAccessToken(ctx, token);
    return record && { record, refresh: false };
  };
  const refresh = async () => {
    const stored = await findRefreshToken(ctx, token);
    if (!stored || stored.consumed || stored.value.expiresAt <= ctx.now()) return undefined;
    const record = stored.value;
    const authorized = { ...record, authorizedAt: authorizedAtOf(record) };
    return (await ctx.notBefore.refuses(authorized)) ? undefined : { record, refresh: true };
  };
  return hint === 'refresh_token' ? ((await refresh()) ?? access()) : ((await access()) ?? refresh());
}

/**
 * POST /introspect (RFC 7662), for the client the token was issued to: access and refresh tokens. `{"active":
 * false}` for a token that is unknown, expired, revoked, used up or another client's: nothing tells these apart
 * (§2.2, §4). `token_type_hint` only orders the lookup (§2.1). A single-use access token is reported, never used
 * up: only the client it was issued to may introspect it, and only the guard spends it.
 */
export function introspectionEndpoint(ctx: IntrospectionCollaborators, auth: ClientAuthenticator) {
  return async (request: RequestContext, req: Request, res: Response): Promise<void> => {
    const { params } = request;
    const { client } = await auth.authenticate(req, res, params, 'introspect');
    request.client = client;
    const token = params.require('token');
    const found = await find(ctx, token, params.get('token_type_hint'));
    if (found === undefined || found.record.clientId !== client.clientId) {
      res.status(200).json({ active: false });
      return;
    }
    const { record, refresh } = found;
    const identifiedBy = readIdentification(record.identifiedBy);
    const body: IntrospectionResponse = {
      active: true,
      scope: record.scope,
      client_id: record.clientId,
      ...(refresh ? {} : { token_type: record.jkt ? ('DPoP' as const) : ('Bearer' as const) }),
      exp: Math.floor(record.expiresAt / 1000),
      iat: Math.floor(record.issuedAt / 1000),
      ...(record.subscriberId === null ? {} : { sub: ctx.pairwiseSubject(record.clientId, record.subscriberId) }),
      iss: ctx.issuer,
      purpose: record.purpose,
      ...(identifiedBy === undefined ? {} : { identified_by: identifiedBy, amr: amrOf(identifiedBy) }),
      ...(record.jkt ? { cnf: { jkt: record.jkt } } : {}),
    };
    res.status(200).json(body);
  };
}
