/**
 * Names the TypeScript examples of README.md and docs/*.md use without defining them: what an earlier example
 * created, or what the reader's application has. test/package/docs-examples.test.ts compiles every example
 * with these declared (against lib/), and .ci/package-check.ts does the same against the packed tarball.
 * An example that needs another name: declare it here, with what it stands for.
 * (Excluded from tsconfig.json: these globals must not leak into the tests.)
 */
import type { Express } from 'express';
import type {
  ConsentRule,
  NetAuth,
  NetAuthEventListener,
  NetAuthOptions,
  RegisteredClient,
  StaticSubscriber,
  SubscriberDirectory,
} from 'express-netauth';

declare global {
  /** The gateway's options from an earlier example: `createNetAuth({ ...options, … })` shows what changes. */
  const options: NetAuthOptions;
  /** The gateway created by an earlier example. */
  const netauth: NetAuth;
  /** The application's Express app. */
  const app: Express;
  /** An Express app on a port only the operator's scraper reaches. */
  const admin: Express;
  /** Parts of the gateway's options. */
  const clients: RegisteredClient[];
  const subscribers: StaticSubscriber[];
  const consentPolicy: ConsentRule[];
  /** The operator's subscriber database (HLR/UDM) behind the two-method interface. */
  const mySubscriberDirectory: SubscriberDirectory;
  /** The operator's line database (HLR/UDM) and its address sessions (CGNAT logs, RADIUS): a SubscriberDirectory's. */
  const hlr: { lineByMsisdn(msisdn: string): Promise<{ subscriberId: string } | undefined> };
  const sessions: {
    current(ip: string, port: number | undefined): Promise<{ subscriberId: string; msisdn: string } | undefined>;
  };
  /** The operator's SIM swap lookup, behind the sample service API. */
  function lookupSwap(phoneNumber: string | undefined): boolean;
  /** A client's secret and the URL its redirect URI received (openid-client examples). */
  const secret: string;
  const callbackUrl: URL;
  /** An operator's audit log and alerting (event examples). */
  const audit: { write(entry: Record<string, unknown>): void };
  const alerts: { bump(key: string): void };
  const listener: NetAuthEventListener<'token.issued'>;
}
