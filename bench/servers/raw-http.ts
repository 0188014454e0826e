/**
 * The runtime limit: node:http alone. Reads the request body to its end (no parsing) and writes the same
 * JSON and headers as the other servers. Nothing written in JavaScript on Node can answer faster.
 */
import http from 'node:http';
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
const AUTHORIZE_PATH = `${ISSUER_PATH}/authorize`;

function respond(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

const server = http.createServer((req, res) => {
  req.on('data', () => {});
  req.on('end', () => {
    const url = req.url ?? '/';
    if (req.method === 'GET' && (url === AUTHORIZE_PATH || url.startsWith(`${AUTHORIZE_PATH}?`))) {
      // Workload 2: the 302 with a code (the state echoed); /token accepts any code, nothing is stored.
      const query = new URLSearchParams(url.slice(AUTHORIZE_PATH.length + 1));
      const location = authorizationRedirect(
        query.get('redirect_uri') ?? BENCH_REDIRECT_URI,
        query.get('state'),
        ISSUER,
      );
      res.writeHead(302, { ...FRONTEND_HEADERS, Location: location, 'Content-Length': 0 });
      return res.end();
    }
    if (req.method !== 'POST') return respond(res, 405, { error: 'invalid_request' }, { Allow: 'POST' });
    switch (req.url) {
      case `${ISSUER_PATH}/bc-authorize`:
        return respond(res, 200, BC_AUTHORIZE_RESPONSE, NO_STORE_HEADERS);
      case `${ISSUER_PATH}/token`:
        return respond(res, 200, TOKEN_RESPONSE, NO_STORE_HEADERS);
      case '/sim-swap/check':
        return respond(res, 200, SERVICE_RESPONSE);
      default:
        return respond(res, 404, { error: 'not_found' });
    }
  });
});

serve(server);
