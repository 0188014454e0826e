import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Interop tests poll a real gateway at its real interval (CIBA waits whole seconds).
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
