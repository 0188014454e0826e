import type { Request, Response } from 'express';
import type { ClientAuthenticator } from '../client-auth/authenticator.js';
import type { GatewayContext } from '../context.js';
import { formParams } from '../http/form.js';
import { findAccessToken } from '../tokens/access-tokens.js';

/** RFC 7662 §2.2 response for an active token. */
export interface IntrospectionResponse {
  active: true;
  scope: string;
  client_id: string;
  /** `DPoP` for a token bound to a DPoP key (RFC 9449 §6.2), else `Bearer`. */
  token_type: 'Bearer' | 'DPoP';
  exp: number;
  iat: number;
  /** Pairwise for the asking client, as in its ID tokens: never the phone number or the operator's id. */
  sub: string;
  iss: string;
  /** The DPV purpose the token was granted for. */
  purpose: string;
  /** RFC 9449 §6.2: the thumbprint of the DPoP key a bound token is bound to. */
  cnf?: { jkt: string };
}

/**
 * POST /introspect (RFC 7662), for the client the token was issued to. `{"active": false}` for a token that
 * is unknown, expired, revoked or another client's: nothing tells these apart (§2.2, §4). Only access
 * tokens exist here, so `token_type_hint` changes nothing (§2.1 lets the server ignore it).
 */
export function introspectionEndpoint(ctx: GatewayContext, auth: ClientAuthenticator) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = formParams(req);
    const client = await auth.authenticate(req, res, params, 'introspect');
    const token = params.require('token');
    params.get('token_type_hint'); // read only to refuse a repeated parameter
    // The same lookup the guard makes for opaque tokens, so the two always agree.
    const record = await findAccessToken(ctx, token);
    const active = record !== undefined && record.clientId === client.clientId;
    if (!active) {
      res.status(200).json({ active: false });
      return;
    }
    const body: IntrospectionResponse = {
      active: true,
      scope: record.scope,
      client_id: record.clientId,
      token_type: record.jkt ? 'DPoP' : 'Bearer',
      exp: Math.floor(record.expiresAt / 1000),
      iat: Math.floor(record.issuedAt / 1000),
      sub: ctx.pairwiseSubject(record.clientId, record.subscriberId),
      iss: ctx.issuer,
      purpose: record.purpose,
      ...(record.jkt ? { cnf: { jkt: record.jkt } } : {}),
    };
    res.status(200).json(body);
  };
}
