/**
 * A small Consent Master for the tests: the REST API docs/consent.md's adapter speaks, over real HTTP, keeping
 * records in memory by its own rules (its own grant ids, its own lifetimes) on an injected clock, and what it
 * removes as `withdrawn` for the history. `withdraw` plays a subscriber withdrawing through the operator's own
 * channels, and `record` one consenting there, which the gateway never sees.
 */
import { randomUUID } from 'node:crypto';
import express from 'express';
import { listen } from '../helpers/listen.js';
import type { ConsentEvidence, ConsentRecord, ConsentWithdrawal } from '../../lib/index.js';

const GRANT_LIFETIME_MS = 180 * 24 * 3600 * 1000;
const DENIAL_LIFETIME_MS = 3600 * 1000;

interface Subject {
  clientId: string;
  subscriberId: string;
  purpose: string;
  scopes: string[];
}

export interface ConsentMasterFake {
  url: string;
  token: string;
  /** Out of band: removes the records and answers them, as the operator's systems would learn of it. */
  withdraw(subject: Subject): ConsentRecord[];
  /** Out of band: the subscriber consents through the operator's own channels (evidence `method: 'registry'`). */
  record(subject: Subject): ConsentRecord[];
  close(): Promise<void>;
}

function isSubject(body: unknown): body is Subject {
  const b = body as Partial<Subject> | null;
  return (
    typeof b === 'object' &&
    b !== null &&
    [b.clientId, b.subscriberId, b.purpose].every((v) => typeof v === 'string') &&
    Array.isArray(b.scopes) &&
    b.scopes.every((s) => typeof s === 'string')
  );
}

export async function startConsentMaster(now: () => number): Promise<ConsentMasterFake> {
  const token = randomUUID();
  const records = new Map<string, ConsentRecord>();
  const withdrawn = new Map<string, ConsentRecord>();
  const key = (clientId: string, subscriberId: string, purpose: string, scope: string) =>
    JSON.stringify([clientId, subscriberId, purpose, scope]);
  const live = (r: ConsentRecord | undefined): r is ConsentRecord => r !== undefined && r.expiresAt > now();
  const remove = (s: Subject, withdrawal: ConsentWithdrawal): ConsentRecord[] =>
    s.scopes.flatMap((scope) => {
      const k = key(s.clientId, s.subscriberId, s.purpose, scope);
      const r = records.get(k);
      records.delete(k);
      if (r?.status === 'granted') withdrawn.set(k, { ...r, status: 'withdrawn', withdrawal });
      return r ? [r] : [];
    });
  const decide = (s: Subject, status: 'granted' | 'denied', evidence: ConsentEvidence | undefined) => {
    const at = now();
    return s.scopes.map((scope) => {
      const k = key(s.clientId, s.subscriberId, s.purpose, scope);
      const previous = records.get(k);
      const record: ConsentRecord = {
        clientId: s.clientId,
        subscriberId: s.subscriberId,
        purpose: s.purpose,
        scope,
        status,
        decidedAt: at,
        expiresAt: at + (status === 'granted' ? GRANT_LIFETIME_MS : DENIAL_LIFETIME_MS),
        grantId:
          status === 'granted' && live(previous) && previous.status === 'granted' ? previous.grantId : randomUUID(),
        ...(evidence ? { evidence } : {}),
      };
      records.set(k, record);
      return record;
    });
  };

  const app = express();
  app.use(express.json());
  app.use((req, res, next) => {
    if (req.headers.authorization !== `Bearer ${token}`) return void res.status(401).json({ error: 'unauthorized' });
    next();
  });
  app.post('/consents', (req, res) => {
    const body = req.body as unknown;
    const status = (body as { status?: unknown }).status;
    if (!isSubject(body) || (status !== 'granted' && status !== 'denied'))
      return void res.status(400).json({ error: 'bad request' });
    res.json(decide(body, status, (body as { evidence?: ConsentEvidence }).evidence));
  });
  app.post('/consents/revoke', (req, res) => {
    const body = req.body as unknown;
    const withdrawal = (body as { withdrawal?: ConsentWithdrawal }).withdrawal;
    if (!isSubject(body) || typeof withdrawal !== 'object') return void res.status(400).json({ error: 'bad request' });
    res.json(remove(body, withdrawal));
  });
  app.post('/consents/find', (req, res) => {
    const body = req.body as unknown;
    if (!isSubject(body)) return void res.status(400).json({ error: 'bad request' });
    res.json(
      body.scopes.map((scope) => records.get(key(body.clientId, body.subscriberId, body.purpose, scope))).filter(live),
    );
  });
  app.get('/subscribers/:id/consents', (req, res) => {
    res.json([...records.values()].filter((r) => r.subscriberId === req.params.id && live(r)));
  });
  app.get('/subscribers/:id/consents/history', (req, res) => {
    const mine = (r: ConsentRecord) => r.subscriberId === req.params.id;
    res.json([...[...records.values()].filter((r) => mine(r) && live(r)), ...[...withdrawn.values()].filter(mine)]);
  });
  const server = await listen(app);
  return {
    url: `${server.url}/`,
    token,
    withdraw: (subject) => remove(subject, { at: now(), by: 'registry', via: 'registry' }),
    record: (subject) => decide(subject, 'granted', { method: 'registry' }),
    close: server.close,
  };
}
