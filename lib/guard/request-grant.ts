import { IncomingMessage } from 'node:http';
import type { Request } from 'express';

/**
 * Where the guard puts `req.netauth`: beside the request, not on it.
 *
 * Express sets every request's prototype (to `app.request`), and V8 gives an object whose prototype was set a
 * hidden class of its own: every property added to a request afterwards copies that class. Measured with
 * valgrind over a guarded route, the one added property cost about a third of the guard's own instructions.
 * So the grant is kept in a WeakMap, and `netauth` is an accessor on Express's base request prototype (the
 * one every application's `app.request`, mounted applications' too, inherits from), installed once. Reading
 * and writing `req.netauth` work as before; requests no guard admitted read `undefined`, as their type says.
 */
const grants = new WeakMap<object, unknown>();
/** Prototypes already looked at: the accessor is installed at most once per Express copy. */
const seen = new WeakSet<object>();

const accessor: PropertyDescriptor = {
  configurable: true,
  enumerable: false,
  get(this: object): unknown {
    return grants.get(this);
  },
  set(this: object, value: unknown) {
    grants.set(this, value);
  },
};

/**
 * Express's base request prototype: the last object in the request's prototype chain before Node's
 * IncomingMessage.prototype. Undefined when the request does not inherit from IncomingMessage that way.
 */
function expressRequestPrototype(req: Request): object | undefined {
  let proto: unknown = Object.getPrototypeOf(req);
  while (proto !== null && typeof proto === 'object') {
    const next: unknown = Object.getPrototypeOf(proto);
    if (next === IncomingMessage.prototype) return proto;
    proto = next;
  }
  return undefined;
}

/** Sets `req.netauth`. */
export function setRequestGrant(req: Request, grant: NonNullable<Request['netauth']>): void {
  const direct: unknown = Object.getPrototypeOf(req);
  if (typeof direct === 'object' && direct !== null && !seen.has(direct)) {
    seen.add(direct);
    const base = expressRequestPrototype(req);
    // Another copy of this package (its CommonJS build beside the ES module) may have installed one: its setter
    // and getter agree with each other, so the assignment below goes through whichever is there.
    if (base !== undefined && !Object.prototype.hasOwnProperty.call(base, 'netauth')) Object.defineProperty(base, 'netauth', accessor);
  }
  // Through the accessor; an own property where none could be installed (a request Express did not set up).
  req.netauth = grant;
}
