import { describe, expect, it } from 'vitest';
import express, { type ErrorRequestHandler, type NextFunction, type Request, type Response } from 'express';
import request from 'supertest';
import { StoreUnavailableError } from '../../../lib/index.js';
import { frontendErrorHandler, jsonErrorHandler } from '../../../lib/gateway/http/render-error.js';
import { resolveConsentPage } from '../../../lib/gateway/http/consent-template.js';
import { ISSUER } from '../../helpers/gateway.js';

/**
 * An error raised after the response has gone (express-session writes after `res.end`) has no one to be shown
 * to. The renderers keep it: reported if unexpected, never handed on to Express's final handler, which would
 * print its stack trace and cut the connection.
 */
describe('errors after the response has started', () => {
  const handlers: Record<string, (onError: (error: unknown) => void) => ErrorRequestHandler> = {
    json: (onError) => jsonErrorHandler(onError),
    frontend: (onError) => frontendErrorHandler(ISSUER, resolveConsentPage(undefined, new URL(ISSUER), []), onError),
  };

  for (const [name, handler] of Object.entries(handlers)) {
    it(`${name} renderer: the response stands, the error goes no further, only an unexpected one is reported`, async () => {
      const reported: unknown[] = [];
      const escaped: unknown[] = [];
      const app = express();
      const late = [new StoreUnavailableError('down'), new Error('bug')];
      app.get('/late/:n', (req: Request, res: Response, next: NextFunction) => {
        res.status(200).json({ ok: true });
        next(late[Number(req.params.n)]);
      });
      app.use(handler((error) => reported.push(error)));
      app.use((error: unknown, _req: Request, _res: Response, next: NextFunction) => {
        escaped.push(error);
        next(error);
      });

      for (const n of [0, 1]) {
        const res = await request(app).get(`/late/${n}`);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ ok: true });
      }
      expect(escaped).toEqual([]);
      expect(reported).toEqual([late[1]]);
    });
  }
});

/** Issue 44: the error page says what happened in plain words, by the error's kind; the code only in its detail line. */
describe('the error page in plain words', () => {
  const page = resolveConsentPage({ operatorName: 'Demo Mobile' }, new URL(ISSUER), []);
  const app = express();
  const errors = [new StoreUnavailableError('down'), new Error('bug')];
  app.get('/fail/:n', (req: Request, _res: Response, next: NextFunction) => next(errors[Number(req.params.n)]));
  app.use(frontendErrorHandler(ISSUER, page, () => {}));

  it.each([
    [0, 503, 'Demo Mobile cannot answer just now. Wait a moment, then try again.', 'temporarily_unavailable'],
    [1, 500, 'Something went wrong at Demo Mobile. Try again later.', 'server_error'],
  ])('error %i: %i, what to do, the code in the detail line', async (n, status, text, code) => {
    const res = await request(app).get(`/fail/${n}`);
    expect(res.status).toBe(status);
    expect(res.text).toContain('<h1>The request could not be completed</h1>');
    expect(res.text).toContain(`<p>${text}</p>`);
    expect(res.text).toMatch(
      new RegExp(`<p class="detail"><small>Details for the application developer: <code>${code}</code>`),
    );
    expect(res.text).not.toContain('bug');
  });
});
