import { describe, expect, it } from 'vitest';
import { requirePeer } from '../../lib/optional-peer.js';

/**
 * redis and prom-client are optional peer dependencies, loaded when RedisStore creates its client or
 * metricsRouter() is called. (CI's fresh projects run the real absence: .ci/package-check.sh.)
 */
describe('optional peer dependencies', () => {
  it('an installed one loads', () => {
    const prom = requirePeer<typeof import('prom-client')>('prom-client', 'netauth.metricsRouter()');
    expect(typeof prom.Registry).toBe('function');
  });

  it('a missing one: an error naming the feature, the package and the command that installs it', () => {
    expect(() => requirePeer('express-netauth-not-installed', 'netauth.metricsRouter()')).toThrow(
      'express-netauth: netauth.metricsRouter() needs the package "express-netauth-not-installed" (an optional peer dependency): npm install express-netauth-not-installed',
    );
  });
});
