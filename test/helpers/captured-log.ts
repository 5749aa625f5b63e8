import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/log.ts';

/** A real Till logger whose lines land, parsed, in `lines`: for tests that check what was logged. */
export function capturedLogger(level = 'info'): { logger: Logger; lines: Record<string, any>[] } {
  const lines: Record<string, any>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger(level, sink), lines };
}
