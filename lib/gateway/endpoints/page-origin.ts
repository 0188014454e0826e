import type { Request } from 'express';
import { OAuthError } from '../../errors.js';

/**
 * The rule of the operator's pages (the consent page, the consents page) for every POST that changes something
 * or makes the operator send a message: it must come from the page itself. The `SameSite=Lax` cookie already
 * keeps a cross-site POST out of the session, but a page of another site must not even reach the code that
 * counts, sends or records anything.
 *
 * - `Sec-Fetch-Site` (every current browser sends it): only `same-origin` and `none` (the person's own action,
 *   a reload) pass; `cross-site` and `same-site` (another origin of the same site) are refused.
 * - Without it (an older browser), an `Origin` other than the issuer's is refused (`null` included).
 * - With neither (a non-browser client, a very old browser): allowed; the session and its CSRF token decide.
 */
export function checkPagePost(req: Request, issuerOrigin: string): void {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined) {
    if (site === 'same-origin' || site === 'none') return;
    throw crossSite();
  }
  const origin = req.headers.origin;
  if (origin === undefined || origin === issuerOrigin) return;
  throw crossSite();
}

function crossSite(): OAuthError {
  return new OAuthError(
    'invalid_request',
    'This form was sent from another site, so it is refused. Open the page again on this site and retry.',
    { status: 403 },
  );
}
