/**
 * Another process resuming a backend-flow request started elsewhere (a job-queue worker): reads the client
 * options and the pending request from NETAUTH_RESUME, polls until decided, prints the outcome as JSON.
 */
import { createNetAuthClient, NetAuthClientError } from '../../lib/client/index.js';

const { options, request } = JSON.parse(process.env.NETAUTH_RESUME ?? '{}') as {
  options: Parameters<typeof createNetAuthClient>[0];
  request: Parameters<ReturnType<typeof createNetAuthClient>['resumeBackchannel']>[0];
};
try {
  const token = await createNetAuthClient(options).resumeBackchannel(request);
  process.stdout.write(`${JSON.stringify({ token })}\n`);
} catch (error) {
  process.stdout.write(
    `${JSON.stringify({ kind: error instanceof NetAuthClientError ? error.kind : 'unexpected' })}\n`,
  );
  process.exitCode = 1;
}
