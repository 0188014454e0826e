import { randomUUID } from 'node:crypto';
import * as oidc from 'openid-client';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import { sha256 } from '../../lib/crypto.js';

/** DPoP (RFC 9449) on the test side: openid-client's handles, and hand-made proofs for the rules it never breaks. */

/**
 * An openid-client DPoP handle on a fresh key pair, with the key's thumbprint (the `jkt` a token is bound to).
 * openid-client names an Ed25519 proof's alg `Ed25519` (RFC 9864); the gateway accepts the algorithms it accepts
 * for client assertions, where Ed25519 is `EdDSA`, so the header says that.
 */
export async function dpopHandle(
  config: oidc.Configuration,
  alg = 'ES256',
): Promise<{ handle: oidc.DPoPHandle; jkt: string }> {
  const rename =
    alg === 'EdDSA'
      ? {
          [oidc.modifyAssertion]: (header: { alg?: string }) => {
            header.alg = 'EdDSA';
          },
        }
      : {};
  const handle = oidc.getDPoPHandle(config, await oidc.randomDPoPKeyPair(alg), rename);
  return { handle, jkt: await handle.calculateThumbprint() };
}

/**
 * The DPoP proof openid-client puts on the request that `send` makes through `config`, captured instead of sent
 * (the call itself sees a 400 and may fail): to send the proof elsewhere, twice, or later.
 */
export async function captureProof(config: oidc.Configuration, send: () => Promise<unknown>): Promise<string> {
  const original = config[oidc.customFetch];
  let proof: string | undefined;
  config[oidc.customFetch] = async (_url, init) => {
    proof = (init.headers as Record<string, string>).dpop;
    return new Response(JSON.stringify({ error: 'invalid_request' }), {
      status: 400,
      headers: { 'content-type': 'application/json' },
    });
  };
  try {
    await send().catch(() => undefined);
  } finally {
    config[oidc.customFetch] = original as oidc.CustomFetch;
  }
  if (proof === undefined) throw new Error('openid-client sent no DPoP proof');
  return proof;
}

/** The proof openid-client makes for a protected-resource request (`fetchProtectedResource` with the handle). */
export function capturedProof(
  config: oidc.Configuration,
  handle: oidc.DPoPHandle,
  accessToken: string,
  url: string,
  method: string,
): Promise<string> {
  return captureProof(config, () =>
    oidc.fetchProtectedResource(config, accessToken, new URL(url), method, undefined, undefined, { DPoP: handle }),
  );
}

export interface ProofKey {
  privateKey: CryptoKey;
  publicJwk: JWK;
  alg: string;
}

export async function proofKey(alg = 'ES256'): Promise<ProofKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { privateKey, publicJwk: await exportJWK(publicKey), alg };
}

export interface HandProof {
  key: ProofKey;
  htm: string;
  htu: string;
  /** Seconds since the epoch. */
  iat: number;
  accessToken?: string;
  /** Claims to add, replace, or (with `undefined`) drop. */
  claims?: Record<string, unknown>;
  /** Header members to add or replace. */
  header?: Record<string, unknown>;
}

/** A DPoP proof signed with jose, as RFC 9449 §4.2 shapes it unless told otherwise. */
export function handProof(proof: HandProof): Promise<string> {
  const claims: Record<string, unknown> = {
    jti: randomUUID(),
    htm: proof.htm,
    htu: proof.htu,
    iat: proof.iat,
    ...(proof.accessToken === undefined ? {} : { ath: sha256(proof.accessToken) }),
    ...proof.claims,
  };
  const payload = Object.fromEntries(Object.entries(claims).filter(([, v]) => v !== undefined));
  return new SignJWT(payload)
    .setProtectedHeader({ alg: proof.key.alg, typ: 'dpop+jwt', jwk: proof.key.publicJwk, ...proof.header })
    .sign(proof.key.privateKey);
}
