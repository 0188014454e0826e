import request from 'supertest';
import type { Express } from 'express';
import { APP1, CIBA } from './gateway.js';

export function bcAuthorize(app: Express, body: Record<string, string>, authorization: string = APP1) {
  return request(app).post('/apigateway/bc-authorize').set('Authorization', authorization).type('form').send(body);
}

export function pollToken(app: Express, authReqId: string, authorization: string = APP1) {
  return request(app)
    .post('/apigateway/token')
    .set('Authorization', authorization)
    .type('form')
    .send({ grant_type: CIBA, auth_req_id: authReqId });
}

/** Starts a backchannel request that must succeed, and returns its auth_req_id. */
export async function startBackchannel(
  app: Express,
  loginHint: string,
  scope: string,
  authorization: string = APP1,
): Promise<string> {
  const res = await bcAuthorize(app, { login_hint: loginHint, scope }, authorization);
  if (res.status !== 200) throw new Error(`bc-authorize failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.auth_req_id as string;
}
