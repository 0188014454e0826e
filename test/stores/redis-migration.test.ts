import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { createClient } from '../helpers/node-redis.js';
import { RedisStore } from '../../lib/index.js';
import { sha256 } from '../../lib/crypto.js';
import { LOCATION, createTestGateway } from '../helpers/gateway.js';
import { RedisServer, requireRedisServer, skipRedisTests } from '../helpers/redis-server.js';

/**
 * docs/redis-store.md, "Migrating from 0.1": the copy script printed there, run as it is printed (its import of
 * the package pointed at lib/) against records written in 0.1's layout, then the gateway on the new layout:
 * the consent is on record, a token issued by 0.1 works, and revoking the consent still revokes that token.
 */

const skip = skipRedisTests('the Redis migration test');
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

/** The ```ts block of the docs' migration section. */
function migrationScript(): string {
  const docs = readFileSync(join(ROOT, 'docs/redis-store.md'), 'utf8');
  const section = docs.slice(docs.indexOf('### Migrating from 0.1'));
  const block = /```ts\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('no ts block in the migration section of docs/redis-store.md');
  return block[1]!.replace("from 'express-netauth'", `from ${JSON.stringify(join(ROOT, 'lib/index.ts'))}`);
}

describe.skipIf(skip)('migrating data written by 0.1', () => {
  let server: RedisServer;
  let dir: string;

  beforeAll(async () => {
    requireRedisServer();
    server = await RedisServer.start();
    // Inside the repository, so the script finds the packages it imports (redis); node_modules/.cache is scratch space.
    mkdirSync(join(ROOT, 'node_modules/.cache'), { recursive: true });
    dir = mkdtempSync(join(ROOT, 'node_modules/.cache/netauth-migration-'));
  });

  afterAll(async () => {
    await server?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the documented copy keeps consents, tokens and their revocation', { timeout: 30_000 }, async () => {
    const gw = createTestGateway({ store: new RedisStore({ url: server.url }) });
    const now = gw.clock.now;
    const raw = createClient({ url: server.url });
    await raw.connect();
    const consentId = ['app-1', 'sub-alice', 'FraudPreventionAndDetection', 'device-location']
      .map(encodeURIComponent)
      .join('|');
    const token = 'K'.repeat(43);
    const old = async (kind: string, id: string, value: object, grants: string[]) => {
      const key = `netauth:rec:${kind}:${id}`;
      await raw.hSet(key, { v: JSON.stringify(value), c: '0', g: JSON.stringify(grants) });
      await raw.pExpire(key, 3_600_000);
      for (const grant of grants)
        await raw.zAdd(`netauth:grant:${grant}`, { score: Date.now() + 3_600_000, value: key });
    };
    try {
      // As 0.1 wrote them: a consent, a token issued under it, and a code (not copied: it lives a minute).
      await old(
        'consent',
        consentId,
        {
          clientId: 'app-1',
          subscriberId: 'sub-alice',
          purpose: 'FraudPreventionAndDetection',
          scope: 'device-location',
          status: 'granted',
          decidedAt: now,
          expiresAt: now + 86_400_000,
          grantId: 'old-consent-grant',
        },
        [],
      );
      await old(
        'access_token',
        sha256(token),
        {
          clientId: 'app-1',
          subscriberId: 'sub-alice',
          phoneNumber: '+34600000001',
          purpose: 'FraudPreventionAndDetection',
          scopes: ['device-location'],
          scope: LOCATION,
          issuedAt: now,
          expiresAt: now + 3_600_000,
          format: 'opaque',
          jti: null,
          grants: ['old-code-grant', 'old-consent-grant'],
        },
        ['old-code-grant', 'old-consent-grant'],
      );
      await old('code', 'old-code', { clientId: 'app-1' }, ['old-code-grant']);

      // .mts: an ES module wherever it is (the script awaits at top level).
      const file = join(dir, 'migrate.mts');
      writeFileSync(file, migrationScript());
      await run(process.execPath, ['--import', 'tsx', file], {
        cwd: ROOT,
        env: { ...process.env, REDIS_URL: server.url },
        timeout: 20_000,
      });

      expect(
        await gw.netauth.consent.lookup({ clientId: 'app-1', login_hint: 'tel:+34600000001', scope: LOCATION }),
      ).toMatchObject([{ status: 'granted', grantId: 'old-consent-grant' }]);
      const api = () => request(gw.app).get('/location').set('Authorization', `Bearer ${token}`);
      expect((await api()).status).toBe(200);
      expect(
        await gw.netauth.consent.revoke({ clientId: 'app-1', login_hint: 'tel:+34600000001', scope: LOCATION }),
      ).toBe(true);
      expect((await api()).status).toBe(401);
    } finally {
      raw.destroy();
      await gw.netauth.close();
    }
  });
});
