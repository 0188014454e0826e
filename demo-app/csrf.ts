/**
 * Cookies and CSRF protection for the demo's own forms (the consent page has its own, in the package).
 * CSRF: a random id in an HttpOnly cookie, and in each form an HMAC of it under a per-process secret;
 * a POST must carry the HMAC of the cookie it came with (compared in constant time).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';

/** The request's cookies (first value wins), decoded; malformed encodings are skipped. */
export function cookies(req: Request): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (name === '' || name in out) continue;
    try {
      out[name] = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      // not ours
    }
  }
  return out;
}

export interface CookieOptions {
  path?: string;
  /** Seconds. */
  maxAge?: number;
}

/** Sets an HttpOnly, SameSite=Lax cookie (the demo runs on http://localhost, so not Secure). */
export function setCookie(res: Response, name: string, value: string, options: CookieOptions = {}): void {
  const parts = [`${name}=${encodeURIComponent(value)}`, `Path=${options.path ?? '/'}`, 'HttpOnly', 'SameSite=Lax'];
  if (options.maxAge !== undefined) parts.push(`Max-Age=${options.maxAge}`);
  res.append('Set-Cookie', parts.join('; '));
}

export interface Csrf {
  /** The token for this browser's forms; sets the cookie first when the browser has none. */
  token(req: Request, res: Response): string;
  /** True when the form field `_csrf` matches this browser's cookie. */
  verify(req: Request): boolean;
}

const ID = /^[A-Za-z0-9_-]{24}$/;

export function createCsrf(cookieName: string, path = '/'): Csrf {
  const secret = randomBytes(32);
  const mac = (id: string) => createHmac('sha256', secret).update(id).digest('base64url');
  return {
    token(req, res) {
      let id = cookies(req)[cookieName];
      if (id === undefined || !ID.test(id)) {
        id = randomBytes(18).toString('base64url');
        setCookie(res, cookieName, id, { path });
      }
      return mac(id);
    },
    verify(req) {
      const id = cookies(req)[cookieName];
      const sent: unknown = (req.body as Record<string, unknown> | undefined)?._csrf;
      if (id === undefined || !ID.test(id) || typeof sent !== 'string') return false;
      const expected = Buffer.from(mac(id));
      const given = Buffer.from(sent);
      return given.length === expected.length && timingSafeEqual(given, expected);
    },
  };
}
