import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * The same tests with Express 4 (the `express4` devDependency) wherever the package or a test imports
 * `express`: .ci/run runs the router, guard and client suites this way, as Express 4 is a supported peer.
 */
export default mergeConfig(
  base,
  defineConfig({
    resolve: { alias: [{ find: /^express$/, replacement: 'express4' }] },
  }),
);
