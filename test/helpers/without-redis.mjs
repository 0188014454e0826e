// `node --import ./without-redis.mjs`: the package `redis` cannot be found, as in an install without it
// (it is an optional peer dependency). Resolves everything else as usual.
import { register } from 'node:module';

register(
  'data:text/javascript,' +
    encodeURIComponent(`
export async function resolve(specifier, context, next) {
  if (specifier === 'redis') {
    throw Object.assign(new Error("Cannot find package 'redis' imported from " + context.parentURL), { code: 'ERR_MODULE_NOT_FOUND' });
  }
  return next(specifier, context);
}
`),
);
