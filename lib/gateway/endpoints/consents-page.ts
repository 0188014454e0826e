import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { OAuthError } from '../../errors.js';
import type { Subscriber } from '../../identity/subscribers.js';
import type { GatewayContext } from '../context.js';
import { contentSecurityPolicy, purposeWords } from '../http/consent-template.js';
import { type ConsentItem, renderConsentsPage, renderNotIdentifiedPage } from '../http/consents-template.js';
import type { RequestContext } from '../http/request-context.js';
import { overLimit } from '../../ops/rate-limits.js';

/** What the consents page keeps in the consent page's session: whose list it served, and its form's token. */
interface ConsentsSession {
  subscriberId: string;
  csrf: string;
  /** The application whose consent was just withdrawn (Post/Redirect/Get), shown once. */
  withdrawn?: string;
}

function sessionOf(req: Request): { netauthConsents?: ConsentsSession } | undefined {
  return req.session as unknown as { netauthConsents?: ConsentsSession } | undefined;
}

function save(req: Request): Promise<void> {
  return new Promise((resolve, reject) => {
    req.session.save((error: unknown) => (error ? reject(error) : resolve()));
  });
}

function sameSecret(a: string, b: string): boolean {
  const digest = (v: string) => createHash('sha256').update(v, 'utf8').digest();
  return timingSafeEqual(digest(a), digest(b));
}

function refused(description: string): OAuthError {
  return new OAuthError('invalid_request', description, { status: 403 });
}

/**
 * The subscriber's consents page: `GET {issuer}/consents` lists the consents of the subscriber the mobile network
 * identifies (each application, purpose, scope and date, with a Withdraw button); `POST` withdraws one, which
 * revokes its tokens at once, and answers 303 back to the list. The network decides whose list it is on every
 * request, so a request from another line never sees it; the form is bound to the browser's session (CSRF) and to
 * the subscriber it was served to.
 */
export class SubscriberConsentsPage {
  constructor(
    private readonly ctx: GatewayContext,
    /** The consent page's express-session (its cookie and store). */
    readonly session: RequestHandler,
  ) {}

  /**
   * The subscriber on this connection, or undefined. The seam for a second factor: with confirmation through the
   * operator's channel on, this page would also ask for it before answering.
   */
  private async subscriber(req: Request): Promise<Subscriber | undefined> {
    // Each view costs a directory lookup and a list: counted with GET /authorize, per device address.
    const retryAfter = await this.ctx.limits?.authorize(req.ip);
    if (retryAfter !== undefined)
      throw overLimit(this.ctx.events, { endpoint: 'consents', limit: 'address', retryAfter });
    // Sandbox mode identifies by login_hint only: no line is recognised here.
    if (this.ctx.sandboxLines || !this.ctx.network) return undefined;
    const result = await this.ctx.network.identify(req, this.ctx.subscribers);
    return result.identified ? result.subscriber : undefined;
  }

  private notIdentified(res: Response): void {
    const nonce = randomBytes(16).toString('base64');
    res.set('Content-Security-Policy', contentSecurityPolicy(this.ctx.consentPage, nonce));
    res.status(403).type('html').send(renderNotIdentifiedPage(this.ctx.consentPage, nonce));
  }

  private async items(subscriberId: string): Promise<ConsentItem[]> {
    const granted = (await this.ctx.consent.list(subscriberId)).filter((r) => r.status === 'granted');
    granted.sort((a, b) => b.decidedAt - a.decidedAt);
    return Promise.all(
      granted.map(async (r) => ({
        clientId: r.clientId,
        clientName: await this.clientName(r.clientId),
        purpose: r.purpose,
        purposeText: capitalised(purposeWords(r.purpose)),
        scope: r.scope,
        scopeText: this.ctx.policy.rule(r.purpose, r.scope)?.description ?? r.scope,
        decidedAt: r.decidedAt,
      })),
    );
  }

  private async clientName(clientId: string): Promise<string> {
    return (await this.ctx.clients.find(clientId))?.name ?? clientId;
  }

  /** GET /consents */
  readonly show = async (_request: RequestContext, req: Request, res: Response): Promise<void> => {
    const subscriber = await this.subscriber(req);
    if (!subscriber) return this.notIdentified(res);
    const items = await this.items(subscriber.id);
    const kept = sessionOf(req)?.netauthConsents;
    const own = kept?.subscriberId === subscriber.id ? kept : undefined;
    const withdrawn = own?.withdrawn;
    let csrf = own?.csrf ?? '';
    // A session (and its cookie) only when there is a form to protect, or a message to clear.
    if (items.length > 0 || withdrawn !== undefined || kept !== undefined) {
      csrf = own?.csrf ?? randomBytes(32).toString('base64url');
      (req.session as unknown as { netauthConsents?: ConsentsSession }).netauthConsents = {
        subscriberId: subscriber.id,
        csrf,
      };
      await save(req);
    }
    const nonce = randomBytes(16).toString('base64');
    res.set('Content-Security-Policy', contentSecurityPolicy(this.ctx.consentPage, nonce));
    res
      .status(200)
      .type('html')
      .send(renderConsentsPage(this.ctx.consentPage, nonce, { items, csrf, withdrawn }));
  };

  /** POST /consents: csrf, client_id, purpose, scope. */
  readonly withdraw = async (request: RequestContext, req: Request, res: Response): Promise<void> => {
    const subscriber = await this.subscriber(req);
    if (!subscriber) return this.notIdentified(res);
    const { params } = request;
    const kept = sessionOf(req)?.netauthConsents;
    const csrf = params.get('csrf');
    // A form this session did not serve to this subscriber: cross-site posts, stale or forged tokens.
    if (!kept || kept.subscriberId !== subscriber.id || csrf === undefined || !sameSecret(csrf, kept.csrf))
      throw refused('This form is not valid any more. Open the page again and retry.');
    const clientId = params.require('client_id');
    const purpose = params.require('purpose');
    const scope = params.require('scope');
    const subject = { clientId, subscriberId: subscriber.id, purpose, scopes: [scope] };
    const removed = await this.ctx.consent.revoke(subject);
    if (removed.length > 0) this.ctx.events.emit('consent.revoked', { ...subject, scopes: [scope], via: 'page' });
    kept.withdrawn = await this.clientName(clientId);
    await save(req);
    res.set('Location', `${this.ctx.issuer}/consents`).status(303).end();
  };
}

function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
