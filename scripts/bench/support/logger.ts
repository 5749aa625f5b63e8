import { openSync } from 'node:fs';
import { createLogger, lineDestination, type Logger } from '../../../src/log.ts';

/** A bench's progress lines on stderr, `<bench>: <message>` (stdout carries the results). */
export function progressLog(bench: string): (msg: string) => void {
  return (msg) => console.error(`${bench}: ${msg}`);
}

/** Till's production logger (info, one write per event-loop turn) with its lines sent to /dev/null: the cost stays, the noise goes. */
export function devNullLogger(): Logger {
  return createLogger('info', lineDestination(openSync('/dev/null', 'w')));
}
