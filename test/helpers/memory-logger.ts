import { Writable } from 'node:stream';
import pino from 'pino';

/** A pino logger writing into memory, at debug (the most the package logs): what a log scan reads. */
export function memoryLogger(): { logger: pino.Logger; text(): string; lines(): Record<string, unknown>[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString('utf8'));
      done();
    },
  });
  return {
    logger: pino({ level: 'debug' }, stream),
    text: () => chunks.join(''),
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}
