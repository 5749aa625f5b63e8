import { pino, type Logger } from 'pino';

export type { Logger };

// Structured JSON lines on stdout. Secrets never reach the logger: callers log
// key ids and masked values only, and the redact list is a second fence.
export function createLogger(level: string = 'info', destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: ['*.authorization', '*.password', '*.rpcPassword', '*.secret', '*.key'], censor: '[redacted]' },
    },
    // Lines are gathered into 4 KiB writes: one small write per request stalls
    // the event loop under load (a 10x worse p99 in the invoice bench).
    // The buffer is flushed on shutdown.
    destination ?? pino.destination({ fd: 1, sync: false, minLength: 4096 }),
  );
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
  const stream = (logger as unknown as Record<symbol, { write(line: string): unknown }>)[pino.symbols.streamSym]!;
  const end = `,"msg":${JSON.stringify(msg)}}\n`;
  return (fields) => {
    if (!logger.isLevelEnabled('info')) return;
    let line = `{"level":30,"time":"${isoNow()}"`;
    for (const key in fields) {
      const value = fields[key];
      if (value !== undefined) line += `,"${key}":${JSON.stringify(value)}`;
    }
    stream.write(line + end);
  };
}

let isoMs = 0;
let iso = '';

/** The time as pino's isoTime writes it, formatted once a millisecond. */
function isoNow(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    iso = new Date(ms).toISOString();
  }
  return iso;
}

export const silentLogger: Logger = pino({ level: 'silent' });
