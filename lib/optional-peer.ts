import { createRequire } from 'node:module';

const load = createRequire(import.meta.url);

/**
 * Loads an optional peer dependency (redis, prom-client) when the feature that needs it is first used, so an
 * installation that never uses the feature need not install the package. Synchronous: both are CommonJS.
 * A missing package is an error naming it and the command that installs it.
 */
export function requirePeer<T>(name: string, feature: string): T {
  try {
    return load(name) as T;
  } catch (error) {
    const missing =
      (error as { code?: unknown } | null)?.code === 'MODULE_NOT_FOUND' &&
      (error as Error).message.includes(`'${name}'`);
    if (!missing) throw error;
    throw new Error(
      `express-netauth: ${feature} needs the package "${name}" (an optional peer dependency): npm install ${name}`,
      {
        cause: error,
      },
    );
  }
}
