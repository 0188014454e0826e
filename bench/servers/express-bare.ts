/**
 * The Express ceiling: an Express 5 app with the same routes, mounted the same way (a Router at the issuer
 * path), that reads the form body with Express's own urlencoded parser (any Express OAuth router must) and
 * returns the same JSON and no-store headers, with no storage, no client authentication and no validation.
 * No Express-based router can be faster than this; express-netauth's ratio to it is its own overhead.
 */
import http from 'node:http';
import express from 'express';
import { BENCH_REDIRECT_URI, ISSUER_PATH, serve } from './common.js';
import {
  BC_AUTHORIZE_RESPONSE,
  FRONTEND_HEADERS,
  NO_STORE_HEADERS,
  SERVICE_RESPONSE,
  TOKEN_RESPONSE,
  authorizationRedirect,
} from './canned.js';

const ISSUER = `http://127.0.0.1${ISSUER_PATH}`;

const form = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 100 });
const router = express.Router();
router.post('/bc-authorize', form, (_req, res) => {
  res.set(NO_STORE_HEADERS).json(BC_AUTHORIZE_RESPONSE);
});
// Workload 2: the 302 with a code (the state echoed), and /token above accepts any code: nothing is stored.
router.get('/authorize', (req, res) => {
  const state = typeof req.query.state === 'string' ? req.query.state : undefined;
  const redirectUri = typeof req.query.redirect_uri === 'string' ? req.query.redirect_uri : BENCH_REDIRECT_URI;
  res
    .set(FRONTEND_HEADERS)
    .set('Location', authorizationRedirect(redirectUri, state, ISSUER))
    .status(302)
    .end();
});
router.post('/token', form, (_req, res) => {
  res.set(NO_STORE_HEADERS).json(TOKEN_RESPONSE);
});

const app = express();
app.use(ISSUER_PATH, router);
// Workload 3's ceiling: the same service route with no guard in front.
app.post('/sim-swap/check', (_req, res) => {
  res.json(SERVICE_RESPONSE);
});

serve(http.createServer(app));
