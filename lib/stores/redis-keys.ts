/**
 * RedisStore's key layout (docs/redis-store.md#key-layout). Every key carries a Redis Cluster hash tag, so
 * Redis Cluster places it by that tag alone:
 *
 *   <prefix><k>.{<tag>}<rest>   a record whose id is `<tag>.<rest>` (lib/stores/store.ts, placementTag)
 *   <prefix><k>:{<id>}          any other record, placed by its whole id (up to a `}` in it)
 *   <prefix><k>;{_}<id>         one whose id is empty or starts with `}` (Redis ignores an empty tag)
 *   <prefix>g.{<tag>}<rest>     the index of a grant whose id carries a tag, and
 *   <prefix>g:{<grantId>}       of any other grant
 *
 * `<k>` is one letter per record kind. The separators keep the forms apart, so no two ids share a key.
 * Everything of one grant (its code or auth_req_id, their poll state, its tokens, its index) has one tag and so
 * one slot: the scripts that update them together declare every key and run on one shard, and a cluster
 * spreads grants over all its shards.
 *
 * A record is one STRING: `<c><grants>\n<value>`, `c` '0' or '1' (consumed), `grants` the grant ids as a JSON
 * array, `value` the JSON of the record (JSON never contains a raw newline). One string is far smaller than a
 * hash once the value outgrows Redis' compact encodings.
 */
import { placementTag, type JsonObject, type RecordKind } from './store.js';

const KIND_LETTERS: Record<RecordKind, string> = {
  code: 'c',
  backchannel: 'b',
  poll: 'p',
  access_token: 't',
  refresh_token: 'f',
  consent: 'k',
  interaction: 'i',
  session: 's',
  revoked: 'r',
  jti: 'j',
  not_before: 'n',
  redemption: 'd',
};

/** A key and the hash tag that places it. */
export interface PlacedKey {
  key: string;
  tag: string;
}

function placed(prefix: string, letter: string, id: string): PlacedKey {
  const tag = placementTag(id);
  if (tag !== undefined) return { key: `${prefix}${letter}.{${tag}}${id.slice(tag.length + 1)}`, tag };
  // Redis takes the tag up to the first `}`: an id containing one is placed by the part before it. An empty
  // tag would make Redis hash the whole key instead, so such ids (empty, or starting with `}`) share the tag `_`.
  const end = id.indexOf('}');
  if (end === 0 || id === '') return { key: `${prefix}${letter};{_}${id}`, tag: '_' };
  return { key: `${prefix}${letter}:{${id}}`, tag: end === -1 ? id : id.slice(0, end) };
}

export function recordKey(prefix: string, kind: RecordKind, id: string): PlacedKey {
  return placed(prefix, KIND_LETTERS[kind], id);
}

export function grantKey(prefix: string, grantId: string): PlacedKey {
  return placed(prefix, 'g', grantId);
}

/**
 * How a grant index names a record: its key without the prefix, short enough (at most 64 bytes for the
 * gateway's ids) for Redis to keep a small index in its compact listpack encoding.
 */
export function memberOf(prefix: string, key: string): string {
  return key.slice(prefix.length);
}

/** The hash tag of an index member (see `placed`: `<k><sep>{<tag>}…`). */
export function tagOfMember(member: string): string {
  const end = member.indexOf('}', 3);
  return member.slice(3, end === -1 ? undefined : end);
}

export function encodeRecord(value: JsonObject, grants: readonly string[]): string {
  return `0${JSON.stringify(grants)}\n${JSON.stringify(value)}`;
}

export function decodeRecord(stored: string): { value: JsonObject; consumed: boolean } {
  const newline = stored.indexOf('\n');
  return { value: JSON.parse(stored.slice(newline + 1)) as JsonObject, consumed: stored[0] === '1' };
}

/** Marker keys of the data-loss check: `<prefix>boot{<tag>}`, one per shard. */
export function markerKey(prefix: string, tag: string): string {
  return `${prefix}boot{${tag}}`;
}
