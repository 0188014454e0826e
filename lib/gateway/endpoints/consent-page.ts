import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import session from 'express-session';
import type { Request, RequestHandler, Response } from 'express';
import { OAuthError } from '../../errors.js';
import {
  contentSecurityPolicy,
  fill,
  renderAnsweredPage,
  renderConsentPage,
  type ConsentPageConfig,
} from '../http/consent-template.js';
import {
  renderCodePage,
  renderCodesLimitPage,
  renderSendFailedPage,
  type CodeProblem,
  type CodeView,
} from '../http/confirmation-template.js';
import { purposeLabel, scopeLabel, speaking } from '../page-language.js';
import type { RequestContext } from '../http/request-context.js';
import { sendAuthorizationResponse, type RedirectTarget } from '../http/respond.js';
import { ContractSessionStore } from '../../stores/session-store.js';
import { createAuthorizationCode, type CodeIssuing } from '../requests/authorization-codes.js';
import { authorizationOf, subscriberOf, type StoredAuthorization } from '../requests/authorization.js';
import { requiresConfirmation, type ConsentConfirmation } from '../../consent/confirmation.js';
import type { ConsentPolicy } from '../../consent/policy.js';
import type { NetworkIdentifier } from '../../identity/network.js';
import type { SubscriberDirectory } from '../../identity/subscribers.js';
import type { Consents } from '../consents.js';
import type { NetAuthOptions } from '../options.js';
import type { ConfirmationFailure } from '../../ops/events.js';
import { noticeOf } from '../../consent/evidence.js';
import type { ConsentEvidence } from '../../consent/registry.js';
import { checkPagePost } from './page-origin.js';
import { authorizedAtOf, type NotBeforeMarkers } from '../levers/not-before.js';

/**
 * What the consent page uses: its own configuration and the confirmation codes, the consents it records and the
 * policy it shows, the subscriber's identification, the levers' markers, and what issuing a code uses.
 */
export interface ConsentPageCollaborators extends CodeIssuing {
  issuer: string;
  profile: NetAuthOptions['profile'];
  consentPage: ConsentPageConfig;
  confirmation: ConsentConfirmation;
  consent: Consents;
  policy: ConsentPolicy;
  subscribers: SubscriberDirectory;
  network: NetworkIdentifier | undefined;
  notBefore: NotBeforeMarkers;
}

/** A validated authorization request waiting for the subscriber's answer, kept in the session. */
export interface PendingConsent extends StoredAuthorization {
  clientName: string;
  redirectUri: string;
  state: string | null;
  /** The scopes whose legal basis is consent: what Allow records. */
  consentScopes: string[];
  codeChallenge: string | null;
  nonce: string | null;
  /** Binds the form to this session and this request. */
  csrf: string;
  expiresAt: number;
  /** The code just refused, shown once by the GET the POST redirects to (Post/Redirect/Get). */
  problem?: CodeProblem;
}

/**
 * A request the subscriber has answered, kept in place of the pending one for the rest of its lifetime: the
 * browser's Back button, after Allow or Deny, comes to the page again and finds a way back to the application.
 */
export interface AnsweredConsent {
  answered: 'allow' | 'deny';
  /** Whose answer it was: a renewed session keeps only its own subscriber's interactions. */
  subscriberId: string;
  clientName: string;
  /** Where "return to the application" leads: the origin of the registered redirect_uri (http and https only). */
  returnTo: string | null;
  expiresAt: number;
}

type Interaction = PendingConsent | AnsweredConsent;
type Interactions = Record<string, Interaction>;

function isAnswered(interaction: Interaction): interaction is AnsweredConsent {
  return 'answered' in interaction;
}

/** Most requests one browser may have waiting at once (several tabs); the oldest give way. */
const MAX_PENDING = 5;
/** Kept a little past expiry so a late answer is told "expired" (and the application gets access_denied). */
const RETENTION = 60;

function interactions(req: Request): Interactions {
  const data = req.session as unknown as { netauth?: Interactions };
  data.netauth ??= {};
  return data.netauth;
}

/** Reads without writing: a session is only created (and a cookie set) by `start`. */
function lookup(req: Request, id: string | undefined): Interaction | undefined {
  const all = (req.session as unknown as { netauth?: Interactions } | undefined)?.netauth;
  return id === undefined || !all || !Object.hasOwn(all, id) ? undefined : all[id];
}

/**
 * A new session id for the interaction that starts (no session fixation): a cookie planted in this browser, by an
 * attacker who started a session of their own, never sees or evicts the request, because that session is destroyed
 * and the browser gets a new cookie. The browser's other interactions move along when they are the same
 * subscriber's (tabs); another subscriber's (the planted ones) are dropped. A session that holds nothing was just
 * created by express-session with a fresh id (a planted id it cannot load is never adopted): nothing to renew.
 */
async function renew(req: Request, subscriberId: string): Promise<void> {
  const all = (req.session as unknown as { netauth?: Interactions }).netauth;
  if (!all || Object.keys(all).length === 0) return;
  const kept = Object.entries(all).filter(([, interaction]) => interaction.subscriberId === subscriberId);
  await new Promise<void>((resolve, reject) => {
    req.session.regenerate((error: unknown) => (error ? reject(error) : resolve()));
  });
  if (kept.length > 0) (req.session as unknown as { netauth?: Interactions }).netauth = Object.fromEntries(kept);
}

function save(req: Request): Promise<void> {
  return new Promise((resolve, reject) => {
    req.session.save((error: unknown) => (error ? reject(error) : resolve()));
  });
}

/** Replaces a pending interaction by its answer. */
function remember(req: Request, id: string, answer: AnsweredConsent): Promise<void> {
  interactions(req)[id] = answer;
  return save(req);
}

/** The application's home for the "already answered" page: the redirect_uri's origin, for web applications. */
function applicationHome(redirectUri: string): string | null {
  try {
    const url = new URL(redirectUri);
    return url.protocol === 'http:' || url.protocol === 'https:' ? `${url.origin}/` : null;
  } catch {
    return null;
  }
}

/** Removes an interaction; the session goes when nothing is left in it. */
function forget(req: Request, id: string): Promise<void> {
  const all = interactions(req);
  delete all[id];
  if (Object.keys(all).length > 0) return save(req);
  return new Promise((resolve, reject) => {
    req.session.destroy((error: unknown) => (error ? reject(error) : resolve()));
  });
}

function sameSecret(a: string, b: string): boolean {
  // Digests first: constant time whatever the lengths.
  const digest = (v: string) => createHash('sha256').update(v, 'utf8').digest();
  return timingSafeEqual(digest(a), digest(b));
}

/** The CSP `form-action` source for the application's callback (Chrome checks the redirect after the POST). */
function callbackSource(redirectUri: string): string {
  try {
    const url = new URL(redirectUri);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
  } catch {
    return "'self'";
  }
}

function refused(description: string): OAuthError {
  return new OAuthError('invalid_request', description, { status: 403 });
}

/**
 * The operator's consent page: GET shows the request, POST records the subscriber's answer and resumes the
 * flow at the application's redirect_uri with a 303. The pending request lives server-side in the session
 * (express-session over the package's Store); the form carries only an interaction id and a CSRF token.
 */
export class ConsentPage {
  /** express-session, scoped to the consent page's cookie. */
  readonly session: RequestHandler;
  private readonly ttl: number;
  private readonly origin: string;

  constructor(private readonly ctx: ConsentPageCollaborators) {
    const page = ctx.consentPage;
    this.ttl = ctx.lifetimes.interaction + RETENTION;
    this.origin = new URL(ctx.issuer).origin;
    this.session = session({
      name: page.cookieName,
      secret: page.cookieSecret,
      store: new ContractSessionStore(ctx.store, this.ttl),
      resave: false,
      saveUninitialized: false,
      // Not 'destroy': with it express-session deletes the session on the way out whenever `req.session` is
      // unset, which includes a session it failed to load (store unavailable): the 503 page would then delete
      // the pending request, or fail again after the response. `forget` destroys sessions explicitly.
      unset: 'keep',
      cookie: {
        httpOnly: true,
        sameSite: 'lax',
        secure: page.secureCookie,
        path: page.cookiePath,
        maxAge: this.ttl * 1000,
      },
    });
  }

  private runSession(req: Request, res: Response): Promise<void> {
    if (req.session) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.session(req, res, (error?: unknown) => (error ? reject(error) : resolve()));
    });
  }

  /** Called by GET /authorize when consent is needed: keeps the request and sends the browser to the page. */
  async start(req: Request, res: Response, pending: Omit<PendingConsent, 'csrf' | 'expiresAt'>): Promise<void> {
    await this.runSession(req, res);
    if (!req.session) {
      throw new Error(
        `express-netauth: consentPage.cookiePath "${this.ctx.consentPage.cookiePath}" does not cover ${req.baseUrl}`,
      );
    }
    if (this.ctx.consentPage.secureCookie && !req.secure) {
      // express-session would silently not set the cookie and the page would never find the request.
      throw new Error(
        'express-netauth: the issuer is https but the request is not secure; set Express "trust proxy" to your TLS proxy',
      );
    }
    await renew(req, pending.subscriberId);
    const id = randomBytes(16).toString('base64url');
    const all = interactions(req);
    const now = this.ctx.now();
    for (const [key, value] of Object.entries(all)) if (value.expiresAt + RETENTION * 1000 <= now) delete all[key];
    const waiting = Object.entries(all).sort(([, a], [, b]) => a.expiresAt - b.expiresAt);
    while (waiting.length >= MAX_PENDING) delete all[waiting.shift()![0]];
    all[id] = {
      ...pending,
      csrf: randomBytes(32).toString('base64url'),
      expiresAt: now + this.ctx.lifetimes.interaction * 1000,
    };
    // The single-use marker: of two submissions of the same form, one wins (the session alone cannot tell).
    await this.ctx.store.put('interaction', id, { clientId: pending.clientId }, { ttl: this.ttl });
    await save(req);
    res
      .set('Location', `${this.ctx.issuer}/consent?interaction=${encodeURIComponent(id)}`)
      .status(302)
      .end();
  }

  private target(pending: PendingConsent, status: 302 | 303): RedirectTarget {
    return { redirectUri: pending.redirectUri, state: pending.state ?? undefined, status };
  }

  /**
   * Why a pending request can no longer be answered, or undefined: it expired, or the operator revoked its
   * subscriber or client since it began (the levers' markers, read from the store).
   */
  private async ended(pending: PendingConsent): Promise<string | undefined> {
    if (pending.expiresAt <= this.ctx.now()) return 'the consent request expired';
    const { clientId, subscriberId } = pending;
    const authorized = { clientId, subscriberId, authorizedAt: authorizedAtOf(pending) };
    return (await this.ctx.notBefore.refuses(authorized))
      ? 'the consent request was revoked by the operator'
      : undefined;
  }

  /** GET /consent?interaction=… */
  readonly show = async (request: RequestContext, req: Request, res: Response): Promise<void> => {
    const page = speaking(this.ctx.consentPage, req, res);
    const id = request.params.get('interaction');
    const pending = lookup(req, id);
    if (id === undefined || !pending) {
      throw new OAuthError(
        'invalid_request',
        'This consent request is unknown or has expired. Return to the application and try again.',
      );
    }
    if (isAnswered(pending)) {
      const nonce = randomBytes(16).toString('base64');
      res.set('Content-Security-Policy', contentSecurityPolicy(this.ctx.consentPage, nonce, []));
      res
        .status(200)
        .type('html')
        .send(renderAnsweredPage(page, nonce, pending));
      return;
    }
    const ended = await this.ended(pending);
    if (ended) {
      request.redirectTarget = this.target(pending, 302);
      await forget(req, id);
      throw new OAuthError('access_denied', ended);
    }
    // Allow was pressed and the code is out: the page asks for it.
    if (this.needsConfirmation(pending) && (await this.ctx.confirmation.sent(id))) {
      const { problem } = pending;
      if (problem !== undefined) {
        delete pending.problem;
        await save(req);
      }
      const view = { ...this.view(page, id, pending), ...(problem === undefined ? {} : { problem }) };
      this.sendPage(res, 200, pending, (nonce) => renderCodePage(page, nonce, view));
      return;
    }
    this.sendPage(res, 200, pending, (nonce) => renderConsentPage(page, nonce, this.view(page, id, pending)));
  };

  /** What the consent page and the code page show of a request, in the page's language. */
  private view(page: ConsentPageConfig, id: string, pending: PendingConsent): CodeView {
    return {
      clientName: pending.clientName,
      purpose: purposeLabel(page, pending.purpose, 'request'),
      scopes: pending.scopes.map((scope) => ({ scope, description: this.describe(page, pending, scope, 'request') })),
      interaction: id,
      csrf: pending.csrf,
    };
  }

  private describe(
    page: ConsentPageConfig,
    pending: PendingConsent,
    scope: string,
    where: 'request' | 'message',
  ): string | undefined {
    return scopeLabel(page, scope, where, this.ctx.policy.rule(pending.purpose, scope)?.description);
  }

  /** The text message that carries the code, in the page's language; `{code}` is left for the hook. */
  private message(page: ConsentPageConfig, pending: PendingConsent, descriptions: string[]): string {
    let scopes = descriptions.join(', ');
    try {
      scopes = new Intl.ListFormat(page.language, { type: 'conjunction' }).format(descriptions);
    } catch {
      /* a tag Intl does not know: commas */
    }
    return fill(page.texts.consentMessage, {
      operator: this.ctx.consentPage.operatorName,
      client: pending.clientName,
      purpose: purposeLabel(page, pending.purpose, 'message'),
      scopes,
      minutes: String(Math.max(1, Math.round(this.ctx.confirmation.settings.codeLifetime / 60))),
    });
  }

  /** Sends one of the request's pages, with a CSP that lets its form lead on to the application's callback. */
  private sendPage(res: Response, status: number, pending: PendingConsent, render: (nonce: string) => string): void {
    const nonce = randomBytes(16).toString('base64');
    res.set(
      'Content-Security-Policy',
      contentSecurityPolicy(this.ctx.consentPage, nonce, [callbackSource(pending.redirectUri)]),
    );
    res.status(status).type('html').send(render(nonce));
  }

  /** Whether the network identifies this request's device as the subscriber the interaction started with. */
  private async sameLine(req: Request, pending: PendingConsent): Promise<boolean> {
    const result = await this.ctx.network?.identify(req, this.ctx.subscribers);
    return result?.identified === true && result.subscriber.id === pending.subscriberId;
  }

  /** Whether a rule of the scopes Allow would record requires confirmation through the operator's channel. */
  private needsConfirmation(pending: PendingConsent): boolean {
    return pending.consentScopes.some((scope) =>
      requiresConfirmation(this.ctx.policy.rule(pending.purpose, scope), this.ctx.profile),
    );
  }

  /**
   * Allow on a request whose consent needs confirmation: without a code, sends one (once) and the page asks for
   * it; with one, checks it. True only when the code is confirmed; otherwise the answer is sent (the code page,
   * the send-failure page) or thrown (access_denied once the code expired or the attempts are spent).
   */
  private async confirm(
    request: RequestContext,
    req: Request,
    res: Response,
    id: string,
    pending: PendingConsent,
  ): Promise<boolean> {
    const page = speaking(this.ctx.consentPage, req, res);
    const failed = (reason: ConfirmationFailure) =>
      this.ctx.events.emit('consent.confirmation_failed', {
        clientId: pending.clientId,
        subscriberId: pending.subscriberId,
        purpose: pending.purpose,
        scopes: pending.consentScopes,
        reason,
        for: 'consent',
      });
    const typed = request.params.get('code');
    const pagePath = `${this.ctx.issuer}/consent?interaction=${encodeURIComponent(id)}`;
    if (typed === undefined) {
      const view = this.view(page, id, pending);
      const descriptions = pending.consentScopes.flatMap(
        (scope) => this.describe(page, pending, scope, 'message') ?? [],
      );
      const sent = await this.ctx.confirmation.issue(
        id,
        subscriberOf(pending),
        {
          for: 'consent',
          clientId: pending.clientId,
          clientName: pending.clientName,
          purpose: pending.purpose,
          scopes: pending.consentScopes,
          descriptions,
          purposeText: purposeLabel(page, pending.purpose, 'message'),
          language: page.language,
          message: this.message(
            page,
            pending,
            pending.consentScopes.map((scope) => this.describe(page, pending, scope, 'message') ?? scope),
          ),
        },
        this.ttl,
      );
      if (sent.result === 'capped') {
        // The subscriber's cap of codes: the request stays pending, Allow works again once the wait is over.
        this.ctx.events.emit('rate.limited', {
          endpoint: 'consent',
          limit: 'confirmation_codes',
          subscriberId: pending.subscriberId,
          retryAfter: sent.retryAfter,
        });
        request.answered = 'temporarily_unavailable';
        res.set('Retry-After', String(sent.retryAfter));
        this.sendPage(res, 429, pending, (nonce) => renderCodesLimitPage(page, nonce, sent.retryAfter));
        return false;
      }
      if (sent.result === 'error' || sent.result === 'timeout') {
        failed(sent.result === 'error' ? 'send_error' : 'send_timeout');
        request.answered = 'temporarily_unavailable';
        this.sendPage(res, 503, pending, (nonce) => renderSendFailedPage(page, nonce, view));
        return false;
      }
      res.set('Location', pagePath).status(303).end();
      return false;
    }
    const check = await this.ctx.confirmation.check(id, typed, this.ttl, pending.subscriberId);
    switch (check.result) {
      case 'confirmed':
        return true;
      case 'none_sent':
        // A code typed before any was sent (a script guessing): the page offers Allow, which sends one.
        res.set('Location', pagePath).status(303).end();
        return false;
      case 'wrong':
      case 'malformed': {
        if (check.result === 'wrong') failed('wrong_code');
        // Post/Redirect/Get: the page with the error is a GET, so Back and reload never post the code again.
        pending.problem =
          check.result === 'wrong' ? { kind: 'wrong', attemptsLeft: check.attemptsLeft } : { kind: 'malformed' };
        await save(req);
        res.set('Location', pagePath).status(303).end();
        return false;
      }
      default: {
        // Expired, the attempts are spent, or the subscriber's wrong codes reached their cap: the interaction
        // ends, as Deny ends it, but records no refusal.
        if (check.result === 'capped') {
          this.ctx.events.emit('rate.limited', {
            endpoint: 'consent',
            limit: 'wrong_codes',
            subscriberId: pending.subscriberId,
            retryAfter: check.retryAfter,
          });
        } else failed(check.result === 'expired' ? 'code_expired' : 'attempts_exhausted');
        if (!(await this.ctx.store.consume('interaction', id)))
          throw refused('This consent request was already answered.');
        request.redirectTarget = this.target(pending, 303);
        await this.ctx.confirmation.discard(id);
        await forget(req, id);
        throw new OAuthError(
          'access_denied',
          check.result === 'expired' ? 'the confirmation code expired' : 'too many wrong confirmation codes',
        );
      }
    }
  }

  /**
   * What demonstrates the answer: the page (confirmed with the code, for an Allow that needed it), the notice it
   * showed (rendered again, in the language the page spoke: the same text, without the per-response nonce and form
   * fields), how the subscriber was identified.
   */
  private evidence(
    page: ConsentPageConfig,
    id: string,
    pending: PendingConsent,
    decision: 'allow' | 'deny',
  ): ConsentEvidence {
    const confirmed = decision === 'allow' && this.needsConfirmation(pending);
    return {
      method: confirmed ? 'page_confirmed' : 'page',
      notice: noticeOf(renderConsentPage(page, '', this.view(page, id, pending)), page.noticeVersion),
      ...(pending.identifiedBy !== undefined ? { identifiedBy: pending.identifiedBy } : {}),
      ...(confirmed
        ? { confirmation: { method: 'one_time_code', channel: this.ctx.confirmation.settings.channel } }
        : {}),
    };
  }

  /** POST /consent: interaction, csrf, decision=allow|deny. */
  readonly decide = async (request: RequestContext, req: Request, res: Response): Promise<void> => {
    // Another site's form never reaches the code that sends a code or records an answer.
    checkPagePost(req, this.origin);
    const { params } = request;
    const id = params.get('interaction');
    const csrf = params.get('csrf');
    const pending = lookup(req, id);
    // Nothing is recorded for a form this session did not serve: cross-site posts, stale or forged tokens.
    if (id === undefined || !pending)
      throw refused('This consent form is not valid any more. Return to the application and try again.');
    if (isAnswered(pending)) throw refused('This consent request was already answered.');
    if (csrf === undefined || !sameSecret(csrf, pending.csrf)) throw refused('This consent form is not valid.');
    const decision = params.get('decision');
    if (decision !== 'allow' && decision !== 'deny')
      throw new OAuthError('invalid_request', 'decision must be allow or deny');
    // The line the request started on answers it: a cookie and a code carried to another line (or off the mobile
    // network) complete nothing. The interaction stays pending for its own line.
    // A request the network identified (not a sandbox login_hint; one stored without the field is checked too).
    if ((pending.identifiedBy ?? 'network') === 'network' && !(await this.sameLine(req, pending))) {
      throw new OAuthError(
        'access_denied',
        'This request can only be answered from the phone line it was made for, on the mobile network.',
        { status: 403 },
      );
    }

    const target = this.target(pending, 303);
    const ended = await this.ended(pending);
    if (ended) {
      request.redirectTarget = target;
      await forget(req, id);
      throw new OAuthError('access_denied', ended);
    }
    // Confirmation through the operator's channel: Allow counts only with the code it sent.
    if (
      decision === 'allow' &&
      this.needsConfirmation(pending) &&
      !(await this.confirm(request, req, res, id, pending))
    )
      return;
    // Answered already (a double submission): the first answer stands.
    if (!(await this.ctx.store.consume('interaction', id))) throw refused('This consent request was already answered.');
    request.redirectTarget = target;
    if (this.needsConfirmation(pending)) await this.ctx.confirmation.discard(id);
    await remember(req, id, {
      answered: decision,
      subscriberId: pending.subscriberId,
      clientName: pending.clientName,
      returnTo: applicationHome(pending.redirectUri),
      expiresAt: pending.expiresAt,
    });

    const subject = {
      clientId: pending.clientId,
      subscriberId: pending.subscriberId,
      purpose: pending.purpose,
      scopes: pending.consentScopes,
    };
    // The notice the subscriber saw was in the language this browser asks for.
    const page = speaking(this.ctx.consentPage, req, res);
    if (decision === 'deny') {
      await this.ctx.consent.deny(subject, this.evidence(page, id, pending, decision));
      this.ctx.events.emit('consent.denied', { ...subject, via: 'page' });
      throw new OAuthError('access_denied', 'the subscriber did not consent');
    }
    const records = await this.ctx.consent.grant(subject, this.evidence(page, id, pending, decision));
    this.ctx.events.emit('consent.granted', { ...subject, via: 'page' });
    const code = await createAuthorizationCode(this.ctx, {
      ...authorizationOf(pending),
      redirectUri: pending.redirectUri,
      codeChallenge: pending.codeChallenge,
      nonce: pending.nonce,
      consentGrants: records.map((r) => r.grantId),
    });
    sendAuthorizationResponse(res, this.ctx.issuer, target, { code });
  };
}
