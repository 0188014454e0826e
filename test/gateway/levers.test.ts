import { describe, expect, it } from 'vitest';
import { createTestGateway } from '../helpers/gateway.js';
import { MemoryStore } from '../../lib/index.js';
import { IssueGate, describeLevers, leversGateway, sharedClock } from '../helpers/levers.js';

/** Issue 43 on the memory store: one gateway plays both instances (its guard's memory is the one it revokes in). */
describeLevers('memory', async (format) => {
  const clock = sharedClock();
  const gate = new IssueGate();
  const store = new MemoryStore({ now: () => clock.now });
  const gw = leversGateway(clock, { accessTokenFormat: format, store: gate.wrap(store) });
  return { a: gw, b: gw, clock, gate, close: () => store.close() };
});

describe('the levers refuse what is not a lever', () => {
  it('an unknown reason, consents value or an empty id is a TypeError naming the allowed values', async () => {
    const { netauth } = createTestGateway();
    const revoke = netauth.subscribers.revoke as (id: unknown, options: unknown) => Promise<unknown>;
    await expect(revoke('sub-alice', { reason: 'bored' })).rejects.toThrow(
      'subscribers.revoke reason must be one of number_recycled, erasure_request, contract_ended, sim_swap, fraud',
    );
    await expect(revoke('sub-alice', { reason: 'fraud', consents: 'maybe' })).rejects.toThrow(
      "subscribers.revoke consents must be 'keep' or 'withdraw'",
    );
    await expect(revoke('', { reason: 'fraud' })).rejects.toThrow(TypeError);
    const revokeClient = netauth.clients.revoke as (id: unknown, options: unknown) => Promise<unknown>;
    await expect(revokeClient('app-1', {})).rejects.toThrow(
      'clients.revoke reason must be one of compromised, offboarded, contract_ended, fraud',
    );
    await netauth.close();
  });

  it('each call is counted in netauth_operator_revocations_total, by what was revoked and why', async () => {
    const { netauth } = createTestGateway();
    const metrics = netauth.metricsRouter();
    await netauth.subscribers.revoke('sub-alice', { reason: 'sim_swap' });
    await netauth.clients.revoke('app-2', { reason: 'compromised' });
    await netauth.clients.revoke('app-2', { reason: 'compromised' });
    const text = await metrics.registry.metrics();
    expect(text).toContain('netauth_operator_revocations_total{revoked="subscriber",reason="sim_swap"} 1');
    expect(text).toContain('netauth_operator_revocations_total{revoked="client",reason="compromised"} 2');
    await netauth.close();
  });
});
