import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type {
  ConsentEvidence,
  ConsentRecord,
  ConsentRegistry,
  ConsentSubject,
  ConsentWithdrawal,
} from '../../lib/index.js';

export interface RegistryHarness {
  registry: ConsentRegistry;
  /** Lets `seconds` pass on the clock the registry decides expiry by. */
  advance(seconds: number): void;
  close?(): Promise<void>;
}

const LOCATION: ConsentSubject = {
  clientId: 'app-1',
  subscriberId: 'sub-alice',
  purpose: 'FraudPreventionAndDetection',
  scopes: ['device-location'],
};

const PAGE: ConsentEvidence = {
  method: 'page',
  notice: { sha256: 'a'.repeat(64), version: '1' },
  identifiedBy: 'network',
};
const CONFIRMED: ConsentEvidence = {
  method: 'page_confirmed',
  notice: { sha256: 'b'.repeat(64), version: '2026-11' },
  identifiedBy: 'network',
  confirmation: { method: 'one_time_code', channel: 'sms' },
};
const BY_OPERATOR: ConsentWithdrawal = { at: 1_800_000_000_000, by: 'operator', via: 'api' };

const sorted = (records: readonly ConsentRecord[]) =>
  [...records].sort((a, b) =>
    `${a.clientId}|${a.purpose}|${a.scope}`.localeCompare(`${b.clientId}|${b.purpose}|${b.scope}`),
  );

/**
 * The behaviour every consent registry must have (lib/consent/registry.ts): the built-in one on each store, and an
 * operator's Consent Master behind its adapter. Each implementation's test calls this with a factory.
 */
export function describeConsentRegistryContract(name: string, create: () => Promise<RegistryHarness>): void {
  describe(`consent registry contract: ${name}`, () => {
    let h: RegistryHarness;
    beforeEach(async () => {
      h = await create();
    });
    afterEach(async () => {
      await h.close?.();
    });

    it('grant answers one granted record per scope, and find reads them back', async () => {
      const subject = { ...LOCATION, scopes: ['device-location', 'sim-swap'] };
      const records = await h.registry.grant(subject, PAGE);
      expect(records.map((r) => r.scope).sort()).toEqual(['device-location', 'sim-swap']);
      for (const r of records) {
        expect(r).toMatchObject({ clientId: 'app-1', subscriberId: 'sub-alice', purpose: subject.purpose });
        expect(r.status).toBe('granted');
        expect(r.expiresAt).toBeGreaterThan(r.decidedAt);
        expect(typeof r.grantId).toBe('string');
        expect(r.grantId).not.toBe('');
      }
      expect(new Set(records.map((r) => r.grantId)).size).toBe(2);
      expect(sorted(await h.registry.find(subject))).toEqual(sorted(records));
      // Only the scopes asked for.
      expect(await h.registry.find(LOCATION)).toEqual(records.filter((r) => r.scope === 'device-location'));
    });

    it('keeps clients, subscribers and purposes apart, with any characters in their names', async () => {
      const odd = { clientId: 'app|1%2F:ü', subscriberId: 'sub/ä|b c', purpose: 'Marketing', scopes: ['a:b/c'] };
      const [a] = await h.registry.grant(odd, PAGE);
      expect(await h.registry.find(odd)).toEqual([a]);
      expect(await h.registry.find({ ...odd, clientId: 'app|1' })).toEqual([]);
      expect(await h.registry.find({ ...odd, subscriberId: 'sub/ä' })).toEqual([]);
      expect(await h.registry.find({ ...odd, purpose: 'Other' })).toEqual([]);
      expect(await h.registry.list(odd.subscriberId)).toEqual([a]);
    });

    it('a grant renewed while live keeps its grant id; a refusal replaces it, and a grant after that has a new one', async () => {
      const [first] = await h.registry.grant(LOCATION, PAGE);
      h.advance(60);
      const [renewed] = await h.registry.grant(LOCATION, PAGE);
      expect(renewed!.grantId).toBe(first!.grantId);
      expect(renewed!.decidedAt).toBeGreaterThan(first!.decidedAt);

      const [denied] = await h.registry.deny(LOCATION, PAGE);
      expect(denied).toMatchObject({ status: 'denied', scope: 'device-location' });
      expect(await h.registry.find(LOCATION)).toEqual([denied]);
      const [again] = await h.registry.grant(LOCATION, PAGE);
      expect(again!.grantId).not.toBe(first!.grantId);
    });

    it('revoke answers what it removed, once', async () => {
      const records = await h.registry.grant({ ...LOCATION, scopes: ['device-location', 'sim-swap'] }, PAGE);
      const removed = await h.registry.revoke(LOCATION, BY_OPERATOR);
      expect(removed).toEqual(records.filter((r) => r.scope === 'device-location'));
      expect(await h.registry.find(LOCATION)).toEqual([]);
      expect(await h.registry.revoke(LOCATION, BY_OPERATOR)).toEqual([]);
      // The other scope stays.
      expect((await h.registry.find({ ...LOCATION, scopes: ['sim-swap'] })).length).toBe(1);
      const [denied] = await h.registry.deny(LOCATION, PAGE);
      expect(await h.registry.revoke(LOCATION, BY_OPERATOR)).toEqual([denied]);
    });

    it("list answers every live record of one subscriber, and no one else's", async () => {
      const mine = [
        ...(await h.registry.grant(LOCATION, PAGE)),
        ...(await h.registry.grant({ ...LOCATION, clientId: 'app-2', scopes: ['sim-swap'] }, PAGE)),
        ...(await h.registry.deny({ ...LOCATION, purpose: 'Marketing' }, PAGE)),
      ];
      await h.registry.grant({ ...LOCATION, subscriberId: 'sub-bob' }, PAGE);
      expect(sorted(await h.registry.list('sub-alice'))).toEqual(sorted(mine));
      expect((await h.registry.list('sub-bob')).map((r) => r.subscriberId)).toEqual(['sub-bob']);
      expect(await h.registry.list('sub-nobody')).toEqual([]);

      await h.registry.revoke({ ...LOCATION, clientId: 'app-2', scopes: ['sim-swap'] }, BY_OPERATOR);
      expect(sorted(await h.registry.list('sub-alice'))).toEqual(sorted(mine.filter((r) => r.clientId !== 'app-2')));
    });

    it('list loses nothing when one subscriber decides many things at once', async () => {
      const subjects = Array.from({ length: 20 }, (_, i) => ({ ...LOCATION, clientId: `app-${i}` }));
      const records = (await Promise.all(subjects.map((s) => h.registry.grant(s, PAGE)))).flat();
      expect(sorted(await h.registry.list('sub-alice'))).toEqual(sorted(records));
      await Promise.all(subjects.slice(0, 10).map((s) => h.registry.revoke(s, BY_OPERATOR)));
      expect(sorted(await h.registry.list('sub-alice'))).toEqual(sorted(records.slice(10)));
      // Nor does history: every withdrawal of those at once is kept.
      const withdrawn = (await h.registry.history!('sub-alice')).filter((r) => r.status === 'withdrawn');
      expect(withdrawn.map((r) => r.clientId).sort()).toEqual(
        subjects
          .slice(0, 10)
          .map((s) => s.clientId)
          .sort(),
      );
    });

    it('an expired record is neither found nor listed', async () => {
      const [record] = await h.registry.grant(LOCATION, PAGE);
      h.advance(Math.ceil((record!.expiresAt - record!.decidedAt) / 1000) + 1);
      expect(await h.registry.find(LOCATION)).toEqual([]);
      expect(await h.registry.list('sub-alice')).toEqual([]);
    });

    it('each record carries the evidence it was given: a grant its own, a refusal its own', async () => {
      const granted = await h.registry.grant({ ...LOCATION, scopes: ['device-location', 'sim-swap'] }, CONFIRMED);
      for (const r of granted) expect(r.evidence).toEqual(CONFIRMED);
      expect(sorted(await h.registry.find({ ...LOCATION, scopes: ['device-location', 'sim-swap'] }))).toEqual(
        sorted(granted),
      );
      const outOfBand: ConsentEvidence = { method: 'out_of_band', identifiedBy: 'tel' };
      const [denied] = await h.registry.deny(LOCATION, outOfBand);
      expect(denied!.evidence).toEqual(outOfBand);
      expect(sorted(await h.registry.list('sub-alice'))).toEqual(
        sorted([denied!, ...granted.filter((r) => r.scope === 'sim-swap')]),
      );
    });

    it('history keeps a revoked consent as withdrawn, with its evidence and who withdrew it; find and list do not', async () => {
      if (h.registry.history === undefined) throw new Error('this registry has no history');
      const [given] = await h.registry.grant(LOCATION, CONFIRMED);
      await h.registry.grant({ ...LOCATION, clientId: 'app-2' }, PAGE);
      await h.registry.deny({ ...LOCATION, purpose: 'Marketing' }, PAGE);
      await h.registry.grant({ ...LOCATION, subscriberId: 'sub-bob' }, PAGE);
      h.advance(60);
      const withdrawal: ConsentWithdrawal = { at: 1_800_000_060_000, by: 'subscriber', via: 'consents_page' };
      expect(await h.registry.revoke(LOCATION, withdrawal)).toEqual([given]);
      // A refusal removed is no consent: nothing to keep.
      await h.registry.revoke({ ...LOCATION, purpose: 'Marketing' }, BY_OPERATOR);
      expect(await h.registry.find(LOCATION)).toEqual([]);
      expect((await h.registry.list('sub-alice')).map((r) => r.clientId)).toEqual(['app-2']);

      const history = await h.registry.history('sub-alice');
      expect(history.map((r) => `${r.clientId} ${r.purpose} ${r.status}`).sort()).toEqual([
        'app-1 FraudPreventionAndDetection withdrawn',
        'app-2 FraudPreventionAndDetection granted',
      ]);
      expect(history.find((r) => r.status === 'withdrawn')).toEqual({ ...given, status: 'withdrawn', withdrawal });

      // Given again: the new grant and the old withdrawal, side by side.
      const [again] = await h.registry.grant(LOCATION, PAGE);
      const after = await h.registry.history('sub-alice');
      expect(
        after
          .filter((r) => r.clientId === 'app-1')
          .map((r) => r.status)
          .sort(),
      ).toEqual(['granted', 'withdrawn']);
      expect(after).toContainEqual(again);
      expect((await h.registry.history('sub-bob')).map((r) => r.subscriberId)).toEqual(['sub-bob']);
      expect(await h.registry.history('sub-nobody')).toEqual([]);
    });
  });
}
