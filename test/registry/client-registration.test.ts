import { describe, expect, it } from 'vitest';
import request from 'supertest';
import type { JWK } from 'jose';
import { StaticClientRegistry, type ClientRegistry, type RegisteredClient } from '../../lib/index.js';
import { CLIENTS, createTestGateway } from '../helpers/gateway.js';
import { CAMARA_CLIENT, CAMARA_KEY, edPair } from '../helpers/client-jwts.js';
import { generateKeyPairSync } from 'node:crypto';

/** Every key registration that cannot work is refused at start-up, with a message naming the option and the fix. */

const { jwks: _inline, ...KEYLESS } = CAMARA_CLIENT;
const small = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'jwk' }) as JWK;
const p521 = generateKeyPairSync('ec', { namedCurve: 'P-521' }).publicKey.export({ format: 'jwk' }) as JWK;

const refused: Array<[string, RegisteredClient, RegExp]> = [
  [
    'private key material in jwks',
    { ...CAMARA_CLIENT, jwks: { keys: [CAMARA_KEY.privateJwk] } },
    /jwks\.keys\[0\] holds private key material \("d"\): register only the client's PUBLIC key/,
  ],
  [
    'a symmetric key in jwks',
    { ...CAMARA_CLIENT, jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] } },
    /private key material \("k"\)/,
  ],
  ['an empty jwks', { ...CAMARA_CLIENT, jwks: { keys: [] } }, /jwks must be a JWK Set with at least one key/],
  [
    'jwks and jwksUri both',
    { ...CAMARA_CLIENT, jwksUri: 'https://app.example/jwks.json' },
    /give jwks or jwksUri, not both/,
  ],
  [
    'a jwksUri over http: outside loopback',
    { ...KEYLESS, jwksUri: 'http://app.example/jwks.json' },
    /jwksUri "http:\/\/app\.example\/jwks\.json" must use https:/,
  ],
  ['a jwksUri that is not a URL', { ...KEYLESS, jwksUri: 'jwks.json' }, /jwksUri "jwks\.json" is not an absolute URL/],
  ['private_key_jwt without keys', KEYLESS, /private_key_jwt needs the client's public keys: give jwks or jwksUri/],
  [
    'private_key_jwt with a secret',
    { ...CAMARA_CLIENT, clientSecret: 's' },
    /private_key_jwt client authenticates with its keys; remove clientSecret/,
  ],
  [
    'requireSignedRequestObject without keys',
    { ...CLIENTS[0]!, requireSignedRequestObject: true },
    /requireSignedRequestObject needs the client's public keys/,
  ],
  [
    'signingAlgorithms with none',
    { ...CAMARA_CLIENT, signingAlgorithms: ['none' as 'RS256'] },
    /signingAlgorithms: "none" is refused; use RS256, PS256, ES256, ES384, EdDSA/,
  ],
  ['signingAlgorithms with HS256', { ...CAMARA_CLIENT, signingAlgorithms: ['HS256' as 'RS256'] }, /"HS256" is refused/],
  ['empty signingAlgorithms', { ...CAMARA_CLIENT, signingAlgorithms: [] }, /signingAlgorithms must list at least one/],
  [
    'a key no allowed algorithm can use',
    { ...CAMARA_CLIENT, signingAlgorithms: ['EdDSA'] },
    /the key signs RS256, which signingAlgorithms does not allow/,
  ],
  [
    'an RSA key under 2048 bits',
    { ...CAMARA_CLIENT, jwks: { keys: [small] } },
    /RSA keys must have at least 2048 bits/,
  ],
  ['an unsupported curve', { ...CAMARA_CLIENT, jwks: { keys: [p521] } }, /unsupported key \(kty EC, crv P-521\)/],
  [
    'an alg that does not fit the key',
    { ...CAMARA_CLIENT, jwks: { keys: [{ ...CAMARA_KEY.publicJwk, alg: 'ES256' }] } },
    /alg ES256 does not fit a RSA key/,
  ],
  [
    'an encryption key',
    { ...CAMARA_CLIENT, jwks: { keys: [{ ...CAMARA_KEY.publicJwk, use: 'enc' }] } },
    /use must be "sig"/,
  ],
  [
    'a broken key',
    { ...CAMARA_CLIENT, jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'AAAA', y: 'AAAA' }] } },
    /is not a valid public JWK/,
  ],
  [
    'an unknown method',
    { ...CLIENTS[0]!, tokenEndpointAuthMethod: 'tls_client_auth' as 'private_key_jwt' },
    /tokenEndpointAuthMethod "tls_client_auth" is not one of/,
  ],
  [
    'a secret client without a secret',
    { ...KEYLESS, tokenEndpointAuthMethod: 'client_secret_basic' },
    /give exactly one of clientSecret and clientSecretHash/,
  ],
];

describe('client registration: keys and methods are checked at start-up', () => {
  it.each(refused)('%s', (_name, client, message) => {
    expect(() => new StaticClientRegistry([client])).toThrow(message);
    expect(() => createTestGateway({ clients: [client] })).toThrow(message);
  });

  it('accepts public RSA, EC and Ed25519 keys, a jwksUri over https: or at a listed internal origin, and keys on a secret client', () => {
    expect(() => new StaticClientRegistry([CAMARA_CLIENT])).not.toThrow();
    expect(
      () =>
        new StaticClientRegistry([
          { ...CAMARA_CLIENT, jwks: { keys: [edPair().publicJwk] }, signingAlgorithms: ['EdDSA'] },
        ]),
    ).not.toThrow();
    expect(() => new StaticClientRegistry([{ ...KEYLESS, jwksUri: 'https://app.example/jwks.json' }])).not.toThrow();
    const internal = { ...KEYLESS, jwksUri: 'http://127.0.0.1:8080/jwks.json' };
    expect(() => new StaticClientRegistry([internal], { internalOrigins: ['http://127.0.0.1:8080'] })).not.toThrow();
    expect(() => new StaticClientRegistry([internal])).toThrow(/must use https:/);
    expect(() => new StaticClientRegistry([{ ...CLIENTS[0]!, jwks: CAMARA_CLIENT.jwks! }])).not.toThrow();
  });
});

describe('discovery advertises exactly what is supported', () => {
  const metadataOf = async (clients: RegisteredClient[] | ClientRegistry) =>
    (await request(createTestGateway({ clients }).app).get('/apigateway/.well-known/openid-configuration'))
      .body as Record<string, unknown>;
  const ALGS = ['RS256', 'PS256', 'ES256', 'ES384', 'EdDSA'];

  it('signed requests: by value, not by reference, with the asymmetric algorithms', async () => {
    const metadata = await metadataOf(CLIENTS);
    expect(metadata).toMatchObject({
      request_parameter_supported: true,
      request_uri_parameter_supported: false,
      request_object_signing_alg_values_supported: ALGS,
      backchannel_authentication_request_signing_alg_values_supported: ALGS,
      token_endpoint_auth_methods_supported: ['client_secret_basic'],
    });
    expect(metadata.token_endpoint_auth_signing_alg_values_supported).toBeUndefined();
  });

  it('the methods the registered clients use, and private_key_jwt’s algorithms when one does', async () => {
    const metadata = await metadataOf([
      ...CLIENTS,
      CAMARA_CLIENT,
      { ...CLIENTS[1]!, clientId: 'poster', tokenEndpointAuthMethod: 'client_secret_post' },
    ]);
    const methods = ['client_secret_basic', 'client_secret_post', 'private_key_jwt'];
    expect(metadata).toMatchObject({
      token_endpoint_auth_methods_supported: methods,
      introspection_endpoint_auth_methods_supported: methods,
      revocation_endpoint_auth_methods_supported: methods,
      token_endpoint_auth_signing_alg_values_supported: ALGS,
      introspection_endpoint_auth_signing_alg_values_supported: ALGS,
      revocation_endpoint_auth_signing_alg_values_supported: ALGS,
    });
    expect((await metadataOf([CAMARA_CLIENT])).token_endpoint_auth_methods_supported).toEqual(['private_key_jwt']);
  });

  it('a custom registry declares its methods; by default client_secret_basic', async () => {
    const find = async () => undefined;
    expect((await metadataOf({ find })).token_endpoint_auth_methods_supported).toEqual(['client_secret_basic']);
    expect(
      (await metadataOf({ find, authMethods: ['private_key_jwt'] })).token_endpoint_auth_methods_supported,
    ).toEqual(['private_key_jwt']);
  });
});
