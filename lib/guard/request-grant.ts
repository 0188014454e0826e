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

/**
 * Per prototype a request was seen with: whether this copy's accessor serves `netauth` on its chain, so the grant
 * can be written to the WeakMap directly (a property write on a request, whose hidden class is its own, costs V8 a
 * lookup through the prototype chain every time).
 */
const served = new WeakMap<object, boolean>();

/** Sets `req.netauth`. */
export function setRequestGrant(req: Request, grant: NonNullable<Request['netauth']>): void {
  const direct: unknown = Object.getPrototypeOf(req);
  if (typeof direct !== 'object' || direct === null) {
    req.netauth = grant;
    return;
  }
  let ours = served.get(direct);
  if (ours === undefined) {
    const base = expressRequestPrototype(req);
    // Another copy of this package (its CommonJS build beside the ES module) may have installed one: its setter
    // and getter agree with each other, so the grant then goes through whichever is there.
    if (base !== undefined && !Object.prototype.hasOwnProperty.call(base, 'netauth')) Object.defineProperty(base, 'netauth', accessor);
    ours = base !== undefined && Object.getOwnPropertyDescriptor(base, 'netauth')?.get === accessor.get && !hasOwnNetauthBelow(req, base);
    served.set(direct, ours);
  }
  if (ours) grants.set(req, grant);
  // Through whatever serves `netauth` there; an own property where none could be installed (a request Express did not set up).
  else req.netauth = grant;
}

/** Whether an object on the chain before `base` (the request itself excepted) defines its own `netauth`. */
function hasOwnNetauthBelow(req: Request, base: object): boolean {
  for (let proto: unknown = Object.getPrototypeOf(req); proto !== base && typeof proto === 'object' && proto !== null; proto = Object.getPrototypeOf(proto)) {
    if (Object.prototype.hasOwnProperty.call(proto, 'netauth')) return true;
  }
  return false;
}
