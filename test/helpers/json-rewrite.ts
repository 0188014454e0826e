import type { ServerResponse } from 'node:http';

export type JsonRewrite = (body: Record<string, unknown>) => void;

/**
 * Makes a gateway answer what a test needs (a token response without `expires_in`, a `scope` sent as an
 * array…): buffers a JSON response, rewrites it, and sends it with the right length. Works under Express
 * (`res.json`) and Koa (node-oidc-provider), which both end with `res.end(body)` before headers are sent.
 */
export function rewriteJsonResponse(res: ServerResponse, rewrite: JsonRewrite): void {
  const chunks: Buffer[] = [];
  const end = res.end.bind(res) as (chunk?: unknown) => ServerResponse;
  const collect = (chunk: unknown): void => {
    if (typeof chunk === 'string' || chunk instanceof Uint8Array) chunks.push(Buffer.from(chunk));
  };
  res.write = ((chunk: unknown) => {
    collect(chunk);
    return true;
  }) as ServerResponse['write'];
  res.end = ((chunk?: unknown) => {
    collect(chunk);
    let body = Buffer.concat(chunks);
    if (/json/.test(String(res.getHeader('content-type') ?? ''))) {
      const parsed = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
      rewrite(parsed);
      body = Buffer.from(JSON.stringify(parsed));
      res.setHeader('content-length', body.length);
    }
    return end(body);
  }) as ServerResponse['end'];
}

/** Per endpoint (the last path segment, e.g. `token`), the rewrite the next responses get. */
export class Tamper {
  private readonly rewrites = new Map<string, JsonRewrite>();

  /** Rewrites every JSON response of `endpoint` until `set(endpoint, undefined)`. */
  set(endpoint: string, rewrite: JsonRewrite | undefined): void {
    if (rewrite) this.rewrites.set(endpoint, rewrite);
    else this.rewrites.delete(endpoint);
  }

  clear(): void {
    this.rewrites.clear();
  }

  /** Installs the rewrite for this request, if its path ends with a tampered endpoint. */
  apply(path: string, res: ServerResponse): void {
    const endpoint = path.split('?')[0]!.split('/').pop()!;
    const rewrite = this.rewrites.get(endpoint);
    if (rewrite) rewriteJsonResponse(res, rewrite);
  }
}
