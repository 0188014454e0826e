/**
 * `npm run demo [-- --config file.json]`: starts the operator gateway and the sample application, prints
 * their URLs, and stops cleanly on Ctrl+C (SIGINT) or SIGTERM. Configuration and start-up problems are one
 * line on stderr and exit code 1, never a stack trace.
 */
import { ConfigError, loadConfig, resolveConfig, type DemoConfig } from './config.js';
import { DemoStartError, type RunningDemo, startDemo } from './start.js';
import { spacedNumber } from './pages.js';

const USAGE = `Usage: npm run demo [-- --config file.json]

Starts the express-netauth demo on loopback: an operator gateway and a sample application.
  --config FILE   JSON file overriding the embedded defaults (see demo-app/demo.example.json, docs/demo.md)
  --help          this text
Environment: REDIS_URL=redis://… to keep the gateway's and the app's state in Redis (default: memory).`;

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

function parseArgs(argv: string[]): { config?: string } {
  const out: { config?: string } = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else if (arg === '--config') {
      const file = argv[++i];
      if (file === undefined || file === '') fail(`demo: --config needs a file name\n\n${USAGE}`);
      out.config = file;
    } else if (arg.startsWith('--config=')) {
      out.config = arg.slice('--config='.length);
      if (out.config === '') fail(`demo: --config needs a file name\n\n${USAGE}`);
    } else {
      fail(`demo: unknown argument ${JSON.stringify(arg)}\n\n${USAGE}`);
    }
  }
  return out;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  let config: DemoConfig;
  try {
    config = args.config === undefined ? resolveConfig({}) : loadConfig(args.config);
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message);
    throw error;
  }

  let demo: RunningDemo;
  try {
    demo = await startDemo(config, {
      ...(process.env.REDIS_URL ? { redisUrl: process.env.REDIS_URL } : {}),
      log: (line) => process.stdout.write(`  gateway  ${line}\n`),
    });
  } catch (error) {
    if (error instanceof DemoStartError) fail(`demo: ${error.message}`);
    throw error;
  }

  const phones = config.subscribers.map(
    (s) =>
      `    ${(s.name ?? s.id).padEnd(10)} ${spacedNumber(s.phoneNumber).padEnd(17)} ${demo.gatewayUrl}/demo/phone/${s.phoneNumber.slice(1)}`,
  );
  process.stdout.write(
    [
      `express-netauth demo (${demo.stores} stores${args.config ? `, config ${args.config}` : ''})`,
      `  Sample application: ${demo.appUrl}/`,
      `  Operator gateway:   ${demo.gatewayUrl}/  (issuer ${demo.issuer})`,
      `  Subscribers' phones (out-of-band consent):`,
      ...phones,
      `Open ${demo.appUrl}/ in a browser. Ctrl+C stops. The gateway's events follow, one line each:`,
      '',
    ].join('\n'),
  );

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(130); // a second Ctrl+C: do not wait
    stopping = true;
    process.stdout.write(`\n${signal}: stopping the demo…\n`);
    demo.close().then(
      () => {
        process.stdout.write('demo stopped\n');
        process.exit(0);
      },
      (error: unknown) => fail(`demo: error while stopping: ${error instanceof Error ? error.message : String(error)}`),
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((error: unknown) => fail(`demo: ${error instanceof Error ? error.message : String(error)}`));
