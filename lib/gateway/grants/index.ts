import type { Grant } from './grant.js';
import { cibaGrant } from './ciba.js';
import { authorizationCodeGrant } from './authorization-code.js';
import { refreshTokenGrant } from './refresh-token.js';
import { clientCredentialsGrant } from './client-credentials.js';
import { jwtBearerGrant } from './jwt-bearer.js';

/** The token endpoint's grants, one module each: a grant type plugs in here (dispatch by grant_type, metrics). */
export const grants: readonly Grant[] = [
  cibaGrant,
  authorizationCodeGrant,
  refreshTokenGrant,
  clientCredentialsGrant,
  jwtBearerGrant,
];
