/**
 * The runtime limit: node:http alone. Reads the request body to its end (no parsing) and writes the same
 * JSON and headers as the other servers. Nothing written in JavaScript on Node can answer faster.
 */
import http from 'node:http';
import { ISSUER_PATH, serve } from './common.js';
import { BC_AUTHORIZE_RESPONSE, NO_STORE_HEADERS, SERVICE_RESPONSE, TOKEN_RESPONSE } from './canned.js';

function respond(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

const server = http.createServer((req, res) => {
  req.on('data', () => {});
  req.on('end', () => {
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
