import { pino } from 'pino';
import { createLogger, type Logger } from '../../../src/log.ts';

/** Till's production logger (info, async writes) with its lines sent to /dev/null: the cost stays, the noise goes. */
export function devNullLogger(): Logger {
  return createLogger('info', pino.destination({ dest: '/dev/null', sync: false }) as unknown as NodeJS.WritableStream);
}
