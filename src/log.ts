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
    // Written off the event loop, one write in flight: a line goes out at
    // once on a quiet till, and under load the lines that come while a write
    // is in flight go out together in the next. (Holding lines until 4 KiB
    // had gathered kept a quiet till's lines back for hours, and measured no
    // faster in the invoice bench.) What is pending is flushed on shutdown.
    destination ?? pino.destination({ fd: 1, sync: false }),
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
