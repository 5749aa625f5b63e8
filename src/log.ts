import { pino, type Logger } from 'pino';
import { toIso } from './clock.ts';

export type { Logger };

// Structured JSON lines on stdout. Secrets never reach the logger: callers log
// key ids and masked values only, and the redact list is a second fence.
export function createLogger(level: string = 'info', destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: ['*.authorization', '*.password', '*.rpcPassword', '*.secret', '*.key'], censor: '[redacted]' },
    },
    destination ?? stdoutLines(),
  );
}

export interface LineDestination {
  write(lines: string): boolean;
  flush(cb?: (err?: Error) => void): void;
}

let stdout: LineDestination | undefined;

/** Stdout as every logger of the process writes it: one destination, see lineDestination(). */
function stdoutLines(): LineDestination {
  return (stdout ??= lineDestination(1));
}

/**
 * Log lines to a file descriptor: the lines of an event-loop turn go out
 * together in one synchronous write when the turn ends. A quiet till's line
 * goes out at once; under load a write serves many requests, and no
 * thread-pool hop is paid per write (~10% of a cached GET's rate on a 2-core
 * machine, where that thread competes with the clients; docs/PERFORMANCE.md).
 * sonic-boom does the writing: short writes, and EAGAIN on a non-blocking
 * pipe. A slow reader slows the till rather than growing its memory, as
 * pino's default.
 */
export function lineDestination(fd: number): LineDestination {
  const out = pino.destination({ fd, sync: true });
  let pending = '';
  let scheduled = false;
  const writePending = () => {
    scheduled = false;
    if (pending === '') return;
    const lines = pending;
    pending = '';
    out.write(lines);
  };
  // Lines of the last turn, when the process ends before it does.
  process.once('exit', writePending);
  return {
    write(lines) {
      pending += lines;
      if (!scheduled) {
        scheduled = true;
        setImmediate(writePending);
      }
      return true;
    },
    flush(cb) {
      writePending();
      cb?.();
    },
  };
}

export type LineFields = Readonly<Record<string, string | number | boolean | null | undefined>>;

/**
 * For the lines written once per request or webhook attempt, whose fields are
 * fixed and hold no secret: the line pino would write at info level, built by
 * hand. Pino's serializer and redaction pass cost ~10 µs a line in a busy
 * server, as much as answering a cached GET (docs/PERFORMANCE.md).
 * Undefined fields are left out, as pino does.
 */
export function createLineLogger(logger: Logger, msg: string): (fields: LineFields) => void {
  const internals = logger as unknown as Record<symbol, unknown>;
  const stream = internals[pino.symbols.streamSym] as { write(line: string): unknown };
  // A child logger's bindings, as pino has already serialized them (",\"k\":v").
  const bindings = (internals[pino.symbols.chindingsSym] as string | undefined) ?? '';
  const end = `,"msg":${JSON.stringify(msg)}}\n`;
  return (fields) => {
    if (!logger.isLevelEnabled('info')) return;
    // pino's isoTime; toIso keeps the last times it formatted, so a busy turn's lines format theirs once.
    let line = `{"level":30,"time":"${toIso(Date.now())}"${bindings}`;
    for (const key in fields) {
      const value = fields[key];
      if (value !== undefined) line += `,"${key}":${JSON.stringify(value)}`;
    }
    stream.write(line + end);
  };
}

export const silentLogger: Logger = pino({ level: 'silent' });
