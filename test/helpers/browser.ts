/**
 * A minimal browser over fetch for multi-origin flows (app ⇄ gateway): keeps cookies per host:port,
 * follows redirects one at a time so a test can look at (or reroute) each hop.
 */
export class Browser {
  private readonly jar = new Map<string, Map<string, string>>();

  /** Extra headers per request, e.g. to play a proxy. */
  async request(
    url: string | URL,
    init: { method?: string; form?: Record<string, string>; headers?: Record<string, string> } = {},
  ): Promise<Response> {
    const target = new URL(url);
    const headers = new Headers(init.headers);
    const cookies = this.jar.get(target.host);
    if (cookies && cookies.size > 0) headers.set('Cookie', [...cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    let body: string | undefined;
    if (init.form) {
      headers.set('Content-Type', 'application/x-www-form-urlencoded');
      body = new URLSearchParams(init.form).toString();
    }
    const res = await fetch(target, {
      method: init.method ?? (body ? 'POST' : 'GET'),
      headers,
      body,
      redirect: 'manual',
    });
    this.store(target.host, res);
    return res;
  }

  /** Follows redirects until a non-redirect answer, or until `stop(url)` says to stop before a hop. */
  async navigate(url: string | URL, stop: (next: URL) => boolean = () => false): Promise<{ res: Response; url: URL }> {
    let current = new URL(url);
    for (let hops = 0; hops < 10; hops++) {
      const res = await this.request(current);
      const location = res.headers.get('location');
      if (res.status < 300 || res.status >= 400 || !location) return { res, url: current };
      const next = new URL(location, current);
      if (stop(next)) return { res, url: next };
      await res.body?.cancel();
      current = next;
    }
    throw new Error('too many redirects');
  }

  private store(host: string, res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      if (eq < 0) continue;
      let cookies = this.jar.get(host);
      if (!cookies) {
        cookies = new Map();
        this.jar.set(host, cookies);
      }
      const value = pair!.slice(eq + 1);
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(line)) cookies.delete(pair!.slice(0, eq).trim());
      else cookies.set(pair!.slice(0, eq).trim(), value);
    }
  }
}

/** The hidden CSRF fields and action of the operator consent page. */
export function consentFormOf(html: string): { action: string; fields: Record<string, string> } {
  const action = /<form[^>]*action="([^"]*)"/.exec(html)?.[1];
  const fields: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    fields[m[1]!] = m[2]!.replace(/&amp;/g, '&');
  if (action === undefined) throw new Error('no consent form on the page');
  return { action: action.replace(/&amp;/g, '&'), fields };
}
