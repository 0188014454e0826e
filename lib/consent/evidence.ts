import { createHash } from 'node:crypto';
import { OAuthError } from '../errors.js';
import { readIdentification } from '../identity/identification.js';
import type { ConsentEvidence, ConsentNotice, ConsentRecord } from './registry.js';

/**
 * What demonstrates a consent, read back for a person: the notice's digest, and a subscriber's records as the
 * JSON `netauth.consent.export` answers (docs/consent.md maps its fields to ISO/IEC TS 27560).
 */

/**
 * The notice a page showed: the SHA-256 (hex) of its `<main>` as a person reads it (tags removed, character
 * references decoded, whitespace collapsed), so the form's hidden fields and the per-response nonce never change
 * it, and the version the operator gave the wording.
 */
export function noticeOf(html: string, version: string): ConsentNotice {
  const main = /<main>([\s\S]*)<\/main>/.exec(html)?.[1] ?? html;
  const text = main
    .replace(/<[^>]*>/g, ' ')
    .replace(/&#([0-9]{1,7});/g, (all: string, code: string) =>
      Number(code) <= 0x10ffff ? String.fromCodePoint(Number(code)) : all,
    )
    .replace(/\s+/g, ' ')
    .trim();
  return { sha256: createHash('sha256').update(text, 'utf8').digest('hex'), version };
}

/** What the operator may say of a decision it collected itself (`netauth.consent.grant`/`deny`). */
export type OutOfBandEvidence = Pick<ConsentEvidence, 'notice' | 'identifiedBy'>;

const HEX_SHA256 = /^[0-9a-f]{64}$/;
const VERSION = /^[\x21-\x7e]{1,64}$/;

/** The evidence of a decision the operator collected, from what it says: checked, since records keep it for years. */
export function outOfBandEvidence(given: OutOfBandEvidence | undefined): ConsentEvidence {
  if (given === undefined) return { method: 'out_of_band' };
  const bad = (what: string) => new OAuthError('invalid_request', `evidence.${what}`);
  if (typeof given !== 'object' || given === null) throw bad('must be an object');
  const { notice, identifiedBy } = given;
  if (notice !== undefined) {
    if (typeof notice !== 'object' || notice === null || !HEX_SHA256.test(String(notice.sha256)))
      throw bad('notice.sha256 must be a SHA-256 in lowercase hex');
    if (typeof notice.version !== 'string' || !VERSION.test(notice.version))
      throw bad('notice.version must be 1 to 64 printable ASCII characters without spaces');
  }
  const kind = readIdentification(identifiedBy);
  if (identifiedBy !== undefined && kind === undefined)
    throw bad("identifiedBy must be 'network', 'operatortoken', 'tel' or 'ipport'");
  return {
    method: 'out_of_band',
    ...(notice !== undefined ? { notice: { sha256: notice.sha256, version: notice.version } } : {}),
    ...(kind !== undefined ? { identifiedBy: kind } : {}),
  };
}

/** One record of an export: times as ISO 8601 (UTC), the application's name beside its id. */
export interface ExportedConsent {
  client: { id: string; name?: string };
  /** The DPV purpose, e.g. `dpv:FraudPreventionAndDetection`. */
  purpose: string;
  scope: string;
  status: ConsentRecord['status'];
  decidedAt: string;
  expiresAt: string;
  /** As recorded; absent on records from before evidence was kept. */
  evidence?: ConsentRecord['evidence'];
  withdrawal?: Omit<NonNullable<ConsentRecord['withdrawal']>, 'at'> & { at: string };
}

/** A subscriber's consent records, as `netauth.consent.export` answers them. */
export interface ConsentExport {
  /** The gateway that holds them. */
  issuer: string;
  subscriberId: string;
  exportedAt: string;
  records: ExportedConsent[];
}

function iso(at: number): string {
  return new Date(at).toISOString();
}

/** The export of a subscriber's records, newest decision first. */
export function exportOf(
  issuer: string,
  subscriberId: string,
  now: number,
  records: readonly ConsentRecord[],
  clientNames: ReadonlyMap<string, string>,
): ConsentExport {
  return {
    issuer,
    subscriberId,
    exportedAt: iso(now),
    records: [...records]
      .sort((a, b) => b.decidedAt - a.decidedAt)
      .map((r) => {
        const name = clientNames.get(r.clientId);
        return {
          client: name === undefined ? { id: r.clientId } : { id: r.clientId, name },
          purpose: `dpv:${r.purpose}`,
          scope: r.scope,
          status: r.status,
          decidedAt: iso(r.decidedAt),
          expiresAt: iso(r.expiresAt),
          ...(r.evidence ? { evidence: r.evidence } : {}),
          ...(r.withdrawal ? { withdrawal: { ...r.withdrawal, at: iso(r.withdrawal.at) } } : {}),
        };
      }),
  };
}
