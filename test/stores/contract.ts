import { describe, expect, it, beforeEach, afterEach } from 'vitest';
import type { Store } from '../../lib/stores/store.js';

export interface StoreHarness {
  store: Store;
  /** Let `seconds` pass for the store (a fake clock, or real waiting). */
  elapse(seconds: number): Promise<void>;
  close?(): Promise<void>;
}

/**
 * The behaviour every store must have. Each store's test file calls this with a factory; the Redis
 * store runs the very same cases against a real redis-server.
 */
export function describeStoreContract(name: string, create: () => Promise<StoreHarness>): void {
  describe(`store contract: ${name}`, () => {
    let h: StoreHarness;
    beforeEach(async () => {
      h = await create();
    });
    afterEach(async () => {
      await h.close?.();
    });

    it('reads back what was put, not consumed', async () => {
      await h.store.put('code', 'a', { clientId: 'c1', n: 1, nested: { list: [1, 'x', null] } }, { ttl: 60 });
      expect(await h.store.get('code', 'a')).toEqual({
        value: { clientId: 'c1', n: 1, nested: { list: [1, 'x', null] } },
        consumed: false,
      });
    });

    it('answers undefined for an unknown id', async () => {
      expect(await h.store.get('code', 'nope')).toBeUndefined();
      expect(await h.store.consume('code', 'nope')).toBe(false);
    });

    it('keeps kinds apart', async () => {
      await h.store.put('code', 'same', { k: 'code' }, { ttl: 60 });
      await h.store.put('access_token', 'same', { k: 'token' }, { ttl: 60 });
      expect((await h.store.get('code', 'same'))?.value).toEqual({ k: 'code' });
      expect((await h.store.get('access_token', 'same'))?.value).toEqual({ k: 'token' });
      await h.store.delete('code', 'same');
      expect(await h.store.get('code', 'same')).toBeUndefined();
      expect(await h.store.get('access_token', 'same')).toBeDefined();
    });

    it('stores a copy: changing the object after put changes nothing', async () => {
      const value = { list: ['a'] as string[] };
      await h.store.put('consent', 'x', value, { ttl: 60 });
      value.list.push('b');
      expect((await h.store.get('consent', 'x'))?.value).toEqual({ list: ['a'] });
    });

    it('accepts ids with separators and unicode', async () => {
      const id = 'client:sub|purpose#scope:ü:🙂';
      await h.store.put('consent', id, { ok: true }, { ttl: 60 });
      expect((await h.store.get('consent', id))?.value).toEqual({ ok: true });
      expect(await h.store.get('consent', 'client:sub|purpose#scope:ü')).toBeUndefined();
    });

    it('refuses a TTL that is not positive', async () => {
      await expect(h.store.put('code', 'z', {}, { ttl: 0 })).rejects.toThrow();
      expect(await h.store.get('code', 'z')).toBeUndefined();
    });

    it('forgets a record after its TTL', async () => {
      await h.store.put('code', 'short', { v: 1 }, { ttl: 1 });
      await h.store.put('code', 'long', { v: 2 }, { ttl: 120 });
      await h.elapse(1.5);
      expect(await h.store.get('code', 'short')).toBeUndefined();
      expect(await h.store.consume('code', 'short')).toBe(false);
      expect((await h.store.get('code', 'long'))?.value).toEqual({ v: 2 });
    });

    it('consume wins once, then reports false; the record stays readable as consumed', async () => {
      await h.store.put('code', 'once', { v: 1 }, { ttl: 60 });
      expect(await h.store.consume('code', 'once')).toBe(true);
      expect(await h.store.consume('code', 'once')).toBe(false);
      expect(await h.store.get('code', 'once')).toEqual({ value: { v: 1 }, consumed: true });
    });

    it('of 50 concurrent consumes exactly one wins', async () => {
      await h.store.put('backchannel', 'race', { v: 1 }, { ttl: 60 });
      const results = await Promise.all(Array.from({ length: 50 }, () => h.store.consume('backchannel', 'race')));
      expect(results.filter(Boolean)).toHaveLength(1);
    });

    it('consume writes the attached records only for the call that consumed, in the same step', async () => {
      await h.store.put('code', 'T1.code', { v: 1 }, { ttl: 60, grants: ['T1.grant'] });
      const token = (id: string, n: number) => ({
        kind: 'access_token' as const,
        id,
        value: { n },
        options: { ttl: 60, grants: ['T1.grant', 'C9.consent'] },
      });
      expect(
        await h.store.consume('code', 'T1.code', [
          token('T1.first', 1),
          { kind: 'poll', id: 'T1.code', value: { p: 1 }, options: { ttl: 30 } },
        ]),
      ).toBe(true);
      expect(await h.store.get('access_token', 'T1.first')).toEqual({ value: { n: 1 }, consumed: false });
      expect((await h.store.get('poll', 'T1.code'))?.value).toEqual({ p: 1 });
      expect(await h.store.consume('code', 'T1.code', [token('T1.second', 2)])).toBe(false);
      expect(await h.store.get('access_token', 'T1.second')).toBeUndefined();
      // Unknown and expired records consume nothing and write nothing.
      expect(await h.store.consume('code', 'T1.unknown', [token('T1.third', 3)])).toBe(false);
      expect(await h.store.get('access_token', 'T1.third')).toBeUndefined();
      // The written record belongs to its grants, also one with another placement tag.
      await h.store.revokeGrant('C9.consent');
      expect(await h.store.get('access_token', 'T1.first')).toBeUndefined();
      expect(await h.store.get('code', 'T1.code')).toEqual({ value: { v: 1 }, consumed: true });
      await h.store.revokeGrant('T1.grant');
      expect(await h.store.get('code', 'T1.code')).toBeUndefined();
    });

    it('of 50 concurrent consumes with attached records exactly one record lands', async () => {
      await h.store.put('backchannel', 'Rc.race', { v: 1 }, { ttl: 60 });
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          h.store.consume('backchannel', 'Rc.race', [
            { kind: 'access_token', id: `Rc.token-${i}`, value: { i }, options: { ttl: 60, grants: ['Rc.g'] } },
          ]),
        ),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      const landed = await Promise.all(results.map((_, i) => h.store.get('access_token', `Rc.token-${i}`)));
      expect(landed.map((r) => r !== undefined)).toEqual(results);
    });

    it('consume refuses an attached record with a bad TTL before consuming anything', async () => {
      await h.store.put('code', 'Bt.code', { v: 1 }, { ttl: 60 });
      await expect(
        h.store.consume('code', 'Bt.code', [{ kind: 'access_token', id: 'Bt.t', value: {}, options: { ttl: 0 } }]),
      ).rejects.toThrow(RangeError);
      expect(await h.store.get('code', 'Bt.code')).toEqual({ value: { v: 1 }, consumed: false });
    });

    it('keeps ids apart that differ only in how they look like placement tags', async () => {
      const ids = [
        'ab.cd',
        'ab}cd',
        'ab}.cd',
        '{ab}cd',
        'ab.cd}',
        'ab}cd}',
        'ab.c.d',
        'ab',
        '',
        '.ab',
        'a-very-long-tag-x.cd',
      ];
      for (const [i, id] of ids.entries()) await h.store.put('jti', id, { i }, { ttl: 60, grants: [id] });
      for (const [i, id] of ids.entries()) expect((await h.store.get('jti', id))?.value).toEqual({ i });
      await h.store.revokeGrant('ab.cd');
      expect(await h.store.get('jti', 'ab.cd')).toBeUndefined();
      expect((await h.store.get('jti', 'ab}cd'))?.value).toEqual({ i: 1 });
    });

    it('add writes only when no live record has the id, and says whether it wrote', async () => {
      expect(await h.store.add('jti', 'seen', { v: 1 }, { ttl: 60 })).toBe(true);
      expect(await h.store.add('jti', 'seen', { v: 2 }, { ttl: 60 })).toBe(false);
      expect(await h.store.get('jti', 'seen')).toEqual({ value: { v: 1 }, consumed: false });
      // Kinds stay apart, and an id taken by put counts as taken.
      expect(await h.store.add('code', 'seen', { v: 3 }, { ttl: 60 })).toBe(true);
      await h.store.put('jti', 'put-first', { v: 4 }, { ttl: 60 });
      expect(await h.store.add('jti', 'put-first', { v: 5 }, { ttl: 60 })).toBe(false);
      await expect(h.store.add('jti', 'bad-ttl', {}, { ttl: 0 })).rejects.toThrow();
    });

    it('add succeeds again once the earlier record has expired', async () => {
      expect(await h.store.add('jti', 'again', { v: 1 }, { ttl: 1 })).toBe(true);
      await h.elapse(1.5);
      expect(await h.store.add('jti', 'again', { v: 2 }, { ttl: 60 })).toBe(true);
      expect((await h.store.get('jti', 'again'))?.value).toEqual({ v: 2 });
    });

    it('of 50 concurrent adds of one id exactly one wins', async () => {
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => h.store.add('jti', 'race', { i }, { ttl: 60 })),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      expect((await h.store.get('jti', 'race'))?.value).toEqual({ i: results.indexOf(true) });
    });

    it('put overwrites the record and resets consumed', async () => {
      await h.store.put('poll', 'p', { n: 1 }, { ttl: 60 });
      await h.store.consume('poll', 'p');
      await h.store.put('poll', 'p', { n: 2 }, { ttl: 60 });
      expect(await h.store.get('poll', 'p')).toEqual({ value: { n: 2 }, consumed: false });
    });

    it('an overwrite with a shorter TTL expires at the new time', async () => {
      await h.store.put('poll', 'p', { n: 1 }, { ttl: 120 });
      await h.store.put('poll', 'p', { n: 2 }, { ttl: 1 });
      await h.elapse(1.5);
      expect(await h.store.get('poll', 'p')).toBeUndefined();
    });

    it('delete removes the record', async () => {
      await h.store.put('access_token', 't', { v: 1 }, { ttl: 60 });
      await h.store.delete('access_token', 't');
      expect(await h.store.get('access_token', 't')).toBeUndefined();
      await h.store.delete('access_token', 't');
    });

    it('revokeGrant deletes every record of the grant, across kinds, and nothing else', async () => {
      await h.store.put('code', 'c', { v: 1 }, { ttl: 60, grants: ['g1'] });
      await h.store.put('access_token', 't1', { v: 2 }, { ttl: 60, grants: ['g1'] });
      await h.store.put('access_token', 't2', { v: 3 }, { ttl: 60, grants: ['g2'] });
      await h.store.put('access_token', 't3', { v: 4 }, { ttl: 60 });
      await h.store.revokeGrant('g1');
      expect(await h.store.get('code', 'c')).toBeUndefined();
      expect(await h.store.get('access_token', 't1')).toBeUndefined();
      expect(await h.store.get('access_token', 't2')).toBeDefined();
      expect(await h.store.get('access_token', 't3')).toBeDefined();
      await h.store.revokeGrant('never-used');
    });

    it('a record in two grants is revoked by either', async () => {
      await h.store.put('access_token', 'both', { v: 1 }, { ttl: 60, grants: ['authz', 'consent'] });
      await h.store.put('access_token', 'other', { v: 2 }, { ttl: 60, grants: ['authz2', 'consent'] });
      await h.store.revokeGrant('consent');
      expect(await h.store.get('access_token', 'both')).toBeUndefined();
      expect(await h.store.get('access_token', 'other')).toBeUndefined();
      await h.store.put('access_token', 'third', { v: 3 }, { ttl: 60, grants: ['authz3', 'consent2'] });
      await h.store.revokeGrant('authz3');
      expect(await h.store.get('access_token', 'third')).toBeUndefined();
    });

    it('an overwritten record leaves the grants it no longer belongs to', async () => {
      await h.store.put('access_token', 'moved', { v: 1 }, { ttl: 60, grants: ['old'] });
      await h.store.put('access_token', 'moved', { v: 2 }, { ttl: 60, grants: ['new'] });
      await h.store.revokeGrant('old');
      expect((await h.store.get('access_token', 'moved'))?.value).toEqual({ v: 2 });
      await h.store.revokeGrant('new');
      expect(await h.store.get('access_token', 'moved')).toBeUndefined();
    });

    it('keeps a not-before marker per subscriber and per client apart from every other kind, until its TTL', async () => {
      // The levers (netauth.subscribers.revoke, clients.revoke): one record each, read where a token is used.
      await h.store.put('not_before', 'subscriber:sub-1', { notBefore: 1000 }, { ttl: 1 });
      await h.store.put('not_before', 'client:sub-1', { notBefore: 2000 }, { ttl: 120 });
      await h.store.put('revoked', 'subscriber:sub-1', { until: 3 }, { ttl: 120 });
      expect(await h.store.get('not_before', 'subscriber:sub-1')).toEqual({
        value: { notBefore: 1000 },
        consumed: false,
      });
      expect((await h.store.get('not_before', 'client:sub-1'))?.value).toEqual({ notBefore: 2000 });
      // A later revocation of the same subscriber moves the marker on.
      await h.store.put('not_before', 'client:sub-1', { notBefore: 4000 }, { ttl: 120 });
      expect((await h.store.get('not_before', 'client:sub-1'))?.value).toEqual({ notBefore: 4000 });
      await h.elapse(1.5);
      expect(await h.store.get('not_before', 'subscriber:sub-1')).toBeUndefined();
      expect((await h.store.get('revoked', 'subscriber:sub-1'))?.value).toEqual({ until: 3 });
    });

    it('a grant written again after revocation can be revoked again', async () => {
      await h.store.put('code', 'r', { v: 1 }, { ttl: 60, grants: ['g'] });
      await h.store.revokeGrant('g');
      await h.store.put('access_token', 'after', { v: 1 }, { ttl: 60, grants: ['g'] });
      await h.store.revokeGrant('g');
      expect(await h.store.get('access_token', 'after')).toBeUndefined();
    });
  });
}
