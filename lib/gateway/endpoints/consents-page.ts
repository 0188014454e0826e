import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { OAuthError } from '../../errors.js';
import type { Subscriber, SubscriberDirectory } from '../../identity/subscribers.js';
import type { NetworkIdentifier } from '../../identity/network.js';
import type { ConsentConfirmation } from '../../consent/confirmation.js';
import type { ConsentPolicy } from '../../consent/policy.js';
import type { ClientRegistry } from '../../registry/clients.js';
import type { Consents } from '../consents.js';
import type { Lifetimes } from '../options.js';
import { contentSecurityPolicy, fill, type ConsentPageConfig } from '../http/consent-template.js';
import { type ConsentItem, renderConsentsPage, renderNotIdentifiedPage } from '../http/consents-template.js';
import {
  renderCodesLimitPage,
  renderConsentsCodeEndPage,
  renderConsentsCodePage,
  renderConsentsSendPage,
  type CodeProblem,
} from '../http/confirmation-template.js';
import type { RequestContext } from '../http/request-context.js';
import { overLimit, type RateLimits } from '../../ops/rate-limits.js';
import type { ConfirmationFailure, EventHub } from '../../ops/events.js';
import { purposeLabel, scopeLabel, speaking } from '../page-language.js';
import { checkPagePost } from './page-origin.js';

/**
 * What the subscriber's consents page uses: the page's configuration and confirmation codes, the subscriber's
 * identification (network or sandbox line) and its limit, the consents and the policy and registry that name them.
 */
export interface ConsentsPageCollaborators {
  issuer: string;
  lifetimes: Required<Lifetimes>;
  now: () => number;
  events: EventHub;
  consentPage: ConsentPageConfig;
  confirmation: ConsentConfirmation;
  consent: Consents;
  policy: ConsentPolicy;
  clients: ClientRegistry;
  subscribers: SubscriberDirectory;
  network: NetworkIdentifier | undefined;
  sandboxLines: ReadonlySet<string> | undefined;
  limits: RateLimits | undefined;
}

/** What the consents page keeps in the consent page's session: whose list it served, and its form's token. */
interface ConsentsSession {
  subscriberId: string;
  csrf: string;
  /** The application whose consent was just withdrawn (Post/Redirect/Get), shown once. */
  withdrawn?: string;
  /**
   * With the operator's channel configured: the device address the network identified the subscriber at, so
   * the session serves no other address (a copied cookie, another line behind the same CGNAT address).
   */
  address?: string;
  /** The id the code that is out is kept under (in the store, hashed), until it is confirmed or ends. */
  gate?: string;
  /** Until when (ms) the right code opened the list to this session. */
  openUntil?: number;
  /** The code just refused, shown once by the GET the POST redirects to (Post/Redirect/Get). */
  problem?: CodeProblem;
}

/** The subscriber on this connection, and the address the network saw. */
interface Identified {
  subscriber: Subscriber;
  address: string;
}

/** Extra seconds the session and the code's record are kept past the interaction lifetime (as the consent page). */
const RETENTION = 60;

function sessionOf(req: Request): { netauthConsents?: ConsentsSession } | undefined {
  return req.session as unknown as { netauthConsents?: ConsentsSession } | undefined;
}

function keep(req: Request, value: ConsentsSession | undefined): void {
  const data = req.session as unknown as { netauthConsents?: ConsentsSession };
  if (value === undefined) delete data.netauthConsents;
  else data.netauthConsents = value;
}

function save(req: Request): Promise<void> {
  return new Promise((resolve, reject) => {
    req.session.save((error: unknown) => (error ? reject(error) : resolve()));
  });
}

/**
 * A new session id once the code is confirmed (no session fixation: a cookie planted before never becomes an
 * open one). The consent page's interactions of the same subscriber move along; nothing else does.
 */
async function renew(req: Request, subscriberId: string): Promise<void> {
  const all = (req.session as unknown as { netauth?: Record<string, { subscriberId: string }> }).netauth ?? {};
  const kept = Object.entries(all).filter(([, interaction]) => interaction.subscriberId === subscriberId);
  await new Promise<void>((resolve, reject) => {
    req.session.regenerate((error: unknown) => (error ? reject(error) : resolve()));
  });
  if (kept.length > 0) (req.session as unknown as { netauth?: object }).netauth = Object.fromEntries(kept);
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
 *
 * With `sendConsentConfirmation` configured, the network is not enough: any app on the handset can load the page
 * from the phone's address. The page then offers to send a one-time code through the hook (`for: 'consents'`),
 * sends it only on a POST from the page itself (a GET never does: any site can make a browser GET a URL), and
 * opens the list only to a session that typed it back, for `lifetimes.interaction`, from the same subscriber and
 * address. Every POST from another site is refused before anything is counted (page-origin.ts).
 */
export class SubscriberConsentsPage {
  private readonly ttl: number;
  private readonly origin: string;

  constructor(
    private readonly ctx: ConsentsPageCollaborators,
    /** The consent page's express-session (its cookie and store). */
    readonly session: RequestHandler,
  ) {
    this.ttl = ctx.lifetimes.interaction + RETENTION;
    this.origin = new URL(ctx.issuer).origin;
  }

  /** The subscriber on this connection, or undefined. */
  private async identify(req: Request): Promise<Identified | undefined> {
    // Each view costs a directory lookup and a list: counted with GET /authorize, per device (address and CGNAT port).
    const retryAfter = await this.ctx.limits?.authorize(this.ctx.network?.countedDevice(req) ?? { ip: req.ip });
    if (retryAfter !== undefined)
      throw overLimit(this.ctx.events, { endpoint: 'consents', limit: 'address', retryAfter });
    // Sandbox mode identifies by login_hint only: no line is recognised here.
    if (this.ctx.sandboxLines || !this.ctx.network) return undefined;
    const result = await this.ctx.network.identify(req, this.ctx.subscribers);
    return result.identified ? { subscriber: result.subscriber, address: result.address.ip } : undefined;
  }

  /** Whether the list needs the code: whenever the operator's channel is configured. */
  private get gated(): boolean {
    return this.ctx.confirmation.enabled;
  }

  /** The session's state when it is this subscriber's (and, gated, this address's). */
  private own(req: Request, who: Identified): ConsentsSession | undefined {
    const kept = sessionOf(req)?.netauthConsents;
    if (kept?.subscriberId !== who.subscriber.id) return undefined;
    return !this.gated || kept.address === who.address ? kept : undefined;
  }

  private isOpen(own: ConsentsSession | undefined): boolean {
    return !this.gated || (own?.openUntil !== undefined && own.openUntil > this.ctx.now());
  }

  /** The page's configuration in this request's language. */
  private page(req: Request, res: Response): ConsentPageConfig {
    return speaking(this.ctx.consentPage, req, res);
  }

  /** `consent.confirmation_failed` for this page: no application, only whose code it was. */
  private failed(subscriberId: string, reason: ConfirmationFailure): void {
    this.ctx.events.emit('consent.confirmation_failed', { for: 'consents', subscriberId, reason });
  }

  private send(res: Response, status: number, render: (nonce: string) => string): void {
    const nonce = randomBytes(16).toString('base64');
    res.set('Content-Security-Policy', contentSecurityPolicy(this.ctx.consentPage, nonce));
    res.status(status).type('html').send(render(nonce));
  }

  private notIdentified(page: ConsentPageConfig, res: Response): void {
    this.send(res, 403, (nonce) => renderNotIdentifiedPage(page, nonce));
  }

  private async items(page: ConsentPageConfig, subscriberId: string): Promise<ConsentItem[]> {
    const granted = (await this.ctx.consent.list(subscriberId)).filter((r) => r.status === 'granted');
    granted.sort((a, b) => b.decidedAt - a.decidedAt);
    return Promise.all(
      granted.map(async (r) => ({
        clientId: r.clientId,
        clientName: await this.clientName(r.clientId),
        purpose: r.purpose,
        purposeText: purposeLabel(page, r.purpose, 'list'),
        scope: r.scope,
        scopeText: scopeLabel(page, r.scope, 'list', this.ctx.policy.rule(r.purpose, r.scope)?.description) ?? r.scope,
        decidedAt: r.decidedAt,
        ...(r.evidence !== undefined ? { evidence: r.evidence } : {}),
      })),
    );
  }

  private async clientName(clientId: string): Promise<string> {
    return (await this.ctx.clients.find(clientId))?.name ?? clientId;
  }

  /** GET /consents */
  readonly show = async (_request: RequestContext, req: Request, res: Response): Promise<void> => {
    const page = this.page(req, res);
    const who = await this.identify(req);
    if (!who) return this.notIdentified(page, res);
    const own = this.own(req, who);
    if (this.isOpen(own)) return this.list(page, req, res, who, own);
    // A code already out for this session: the page asks for it again (a reload sends no second message), with
    // the problem of the code just refused, once.
    if (own?.gate !== undefined && (await this.ctx.confirmation.sent(own.gate))) {
      const { problem } = own;
      if (problem !== undefined) {
        delete own.problem;
        await save(req);
      }
      const view = { csrf: own.csrf, ...(problem === undefined ? {} : { problem }) };
      return this.send(res, 200, (nonce) => renderConsentsCodePage(page, nonce, view));
    }
    // HEAD (a link checker, a prefetch) gets no session.
    if (req.method === 'HEAD') return this.send(res, 200, () => '');
    // Nothing is sent on a GET: the page offers to send the code, on a POST of its own form.
    const csrf = await this.begin(req, who, own);
    this.send(res, 200, (nonce) => renderConsentsSendPage(page, nonce, { csrf }));
  };

  /** This subscriber's session on this address, with no code out: its form token. */
  private async begin(req: Request, who: Identified, own: ConsentsSession | undefined): Promise<string> {
    const csrf = own?.csrf ?? randomBytes(32).toString('base64url');
    keep(req, { subscriberId: who.subscriber.id, address: who.address, csrf });
    await save(req);
    return csrf;
  }

  private async list(
    page: ConsentPageConfig,
    req: Request,
    res: Response,
    who: Identified,
    own: ConsentsSession | undefined,
  ): Promise<void> {
    const items = await this.items(page, who.subscriber.id);
    const withdrawn = own?.withdrawn;
    let csrf = own?.csrf ?? '';
    // A session (and its cookie) only when there is a form to protect, or a message to clear.
    if (items.length > 0 || withdrawn !== undefined || sessionOf(req)?.netauthConsents !== undefined) {
      csrf = own?.csrf ?? randomBytes(32).toString('base64url');
      keep(req, {
        subscriberId: who.subscriber.id,
        csrf,
        ...(own?.address !== undefined ? { address: own.address } : {}),
        ...(own?.openUntil !== undefined ? { openUntil: own.openUntil } : {}),
      });
      await save(req);
    }
    this.send(res, 200, (nonce) => renderConsentsPage(page, nonce, { items, csrf, withdrawn }));
  }

  /**
   * POST /consents with `send=code`, from the page's own form: sends a new code for this session (unless one is
   * out already) and back to the page (303), which asks for it; or the page that says why none went.
   */
  private async sendCode(
    request: RequestContext,
    req: Request,
    res: Response,
    who: Identified,
    own: ConsentsSession,
  ): Promise<void> {
    const location = `${this.ctx.issuer}/consents`;
    if (this.isOpen(own) || (own.gate !== undefined && (await this.ctx.confirmation.sent(own.gate))))
      return void res.set('Location', location).status(303).end();
    const page = this.page(req, res);
    const gate = randomBytes(16).toString('base64url');
    const message = fill(page.texts.consentsMessage, {
      operator: page.operatorName,
      minutes: String(Math.max(1, Math.round(this.ctx.confirmation.settings.codeLifetime / 60))),
    });
    const sent = await this.ctx.confirmation.issue(
      gate,
      who.subscriber,
      { for: 'consents', language: page.language, message },
      this.ttl,
    );
    if (sent.result === 'capped') {
      this.ctx.events.emit('rate.limited', {
        endpoint: 'consents',
        limit: 'confirmation_codes',
        subscriberId: who.subscriber.id,
        retryAfter: sent.retryAfter,
      });
      request.answered = 'temporarily_unavailable';
      res.set('Retry-After', String(sent.retryAfter));
      return this.send(res, 429, (nonce) => renderCodesLimitPage(page, nonce, sent.retryAfter));
    }
    if (sent.result !== 'sent') {
      // 'already_sent' cannot happen with a new id; the hook's error is not passed on (it may quote the number).
      if (sent.result !== 'already_sent')
        this.failed(who.subscriber.id, sent.result === 'error' ? 'send_error' : 'send_timeout');
      request.answered = 'temporarily_unavailable';
      return this.send(res, 503, (nonce) => renderConsentsCodeEndPage(page, nonce, 'send_failed', own.csrf));
    }
    keep(req, { subscriberId: who.subscriber.id, address: who.address, csrf: own.csrf, gate });
    await save(req);
    res.set('Location', location).status(303).end();
  }

  /** POST /consents with `code`: the code typed back. The right one opens the list to this session. */
  private async confirm(
    req: Request,
    res: Response,
    who: Identified,
    own: ConsentsSession,
    typed: string,
  ): Promise<void> {
    const page = `${this.ctx.issuer}/consents`;
    // Nothing out (confirmed already, or the code's record is gone): the page decides what comes next.
    if (own.gate === undefined) return void res.set('Location', page).status(303).end();
    const check = await this.ctx.confirmation.check(own.gate, typed, this.ttl, who.subscriber.id);
    switch (check.result) {
      case 'confirmed': {
        await this.ctx.confirmation.discard(own.gate);
        await renew(req, who.subscriber.id);
        keep(req, {
          subscriberId: who.subscriber.id,
          address: who.address,
          csrf: randomBytes(32).toString('base64url'),
          openUntil: this.ctx.now() + this.ctx.lifetimes.interaction * 1000,
        });
        await save(req);
        return void res.set('Location', page).status(303).end();
      }
      case 'none_sent':
        return void res.set('Location', page).status(303).end();
      case 'wrong':
      case 'malformed': {
        if (check.result === 'wrong') this.failed(who.subscriber.id, 'wrong_code');
        // Post/Redirect/Get: the page with the error is a GET, so Back and reload never post the code again.
        own.problem =
          check.result === 'wrong' ? { kind: 'wrong', attemptsLeft: check.attemptsLeft } : { kind: 'malformed' };
        await save(req);
        return void res.set('Location', page).status(303).end();
      }
      default: {
        // Expired, the attempts are spent, or the subscriber's wrong codes reached their cap: this code is over; a
        // new one starts again (within the caps) with a new form token, so the old page's forms are spent.
        if (check.result === 'capped') {
          this.ctx.events.emit('rate.limited', {
            endpoint: 'consents',
            limit: 'wrong_codes',
            subscriberId: who.subscriber.id,
            retryAfter: check.retryAfter,
          });
        } else this.failed(who.subscriber.id, check.result === 'expired' ? 'code_expired' : 'attempts_exhausted');
        await this.ctx.confirmation.discard(own.gate);
        const csrf = randomBytes(32).toString('base64url');
        keep(req, { subscriberId: who.subscriber.id, address: who.address, csrf });
        await save(req);
        const shown = this.page(req, res);
        return this.send(res, 403, (nonce) => renderConsentsCodeEndPage(shown, nonce, 'ended', csrf));
      }
    }
  }

  /** POST /consents: csrf and send=code or code (gated), or csrf, client_id, purpose, scope (Withdraw). */
  readonly withdraw = async (request: RequestContext, req: Request, res: Response): Promise<void> => {
    // Another site's form: refused before anything is counted, looked up or sent.
    checkPagePost(req, this.origin);
    const who = await this.identify(req);
    if (!who) return this.notIdentified(this.page(req, res), res);
    const { params } = request;
    const own = this.own(req, who);
    const csrf = params.get('csrf');
    // A form this session did not serve to this subscriber: cross-site posts, stale or forged tokens.
    if (!own || csrf === undefined || !sameSecret(csrf, own.csrf))
      throw refused('This form is not valid any more. Open the page again and retry.');
    if (this.gated && params.get('send') === 'code') return this.sendCode(request, req, res, who, own);
    const code = params.get('code');
    if (this.gated && code !== undefined) return this.confirm(req, res, who, own, code);
    // Gated, only a session the code opened (and not past its time) withdraws.
    if (!this.isOpen(own)) throw refused('This page is not open any more. Open it again and type the new code.');
    const clientId = params.require('client_id');
    const purpose = params.require('purpose');
    const scope = params.require('scope');
    const subject = { clientId, subscriberId: who.subscriber.id, purpose, scopes: [scope] };
    const removed = await this.ctx.consent.revoke(subject, { by: 'subscriber', via: 'consents_page' });
    if (removed.length > 0) this.ctx.events.emit('consent.revoked', { ...subject, scopes: [scope], via: 'page' });
    own.withdrawn = await this.clientName(clientId);
    await save(req);
    res.set('Location', `${this.ctx.issuer}/consents`).status(303).end();
  };
}
