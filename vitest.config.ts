import { defineConfig } from 'vitest/config';

/**
 * Files that start in a fresh process each: those that check what happens once per process (a start-up
 * warning on stderr is printed once, however many gateways are made), and those that start Redis servers,
 * child processes or a browser, whose clients and timers are safest ended with their process.
 */
const FRESH_PROCESS = [
  'test/gateway/options.test.ts',
  'test/gateway/endpoints/keys-discovery.test.ts',
  'test/stores/**/*.test.ts',
  'test/demo/**/*.test.ts',
  'test/ops/**/*.test.ts',
  'test/package/**/*.test.ts',
  'test/gateway/client-auth/jti-redis.test.ts',
  'test/gateway/client-auth/lockout.test.ts',
  'test/gateway/client-auth/scrypt-flood.test.ts',
  'test/gateway/grants/grants-redis.test.ts',
  'test/gateway/endpoints/wrong-codes.test.ts',
  'test/client/helpers.test.ts',
  'test/interop/dpop-openid-client.test.ts',
  'test/guard/frozen-grant.test.ts',
  'test/gateway/tokens/client-visible-values.test.ts',
];

export default defineConfig({
  test: {
    // Most files wait on servers, sockets and timers more than they compute: three at a time keep two cores busy
    // (vitest's default on two cores is one).
    maxWorkers: 3,
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // `include` per project: a project's arrays add to the root's, so one at the root would run every file twice.
    projects: [
      {
        extends: true,
        test: {
          name: 'shared',
          include: ['test/**/*.test.ts'],
          exclude: FRESH_PROCESS,
          // The files share their workers' module cache: importing lib/, openid-client and jose once per worker
          // instead of once per file is most of the suite's time. Each file still closes what it starts.
          isolate: false,
        },
      },
      { extends: true, test: { name: 'fresh', include: FRESH_PROCESS } },
    ],
  },
});
