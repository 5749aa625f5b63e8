import { connect } from 'node:net';

/**
 * Bytes written on one connection until the server closes it; `reply` may
 * write more as answers arrive (its text so far: null writes nothing).
 * Resolves with everything received; rejects if the connection is still
 * open after `timeoutMs`.
 */
export function rawConversation(url: string, bytes: string, reply: (got: string) => string | null = () => null, timeoutMs = 5000): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let got = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`timeout: ${got.slice(0, 300)}`));
    }, timeoutMs);
    socket.on('data', (d) => {
      got += d.toString('latin1');
      const more = reply(got);
      if (more !== null && !socket.destroyed) socket.write(more);
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(got);
    });
    socket.write(bytes);
  });
}

/** The status codes of every HTTP/1.1 response in a conversation's text, in order (a response may follow a body directly). */
export function statusCodes(text: string): number[] {
  return [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
}

export interface RawAnswer {
  status: number;
  /** Header names in lower case, each with every value it was sent with. */
  headers: Map<string, string[]>;
  body: Buffer;
}

/**
 * Writes `bytes` on a new connection (then half-closes it, with `end`) and
 * reads the answers until the server closes the connection, or until one that
 * streams (an event stream, a 101) has sent its headers: that one is taken
 * without its body and the connection dropped. `head` says the request was a
 * HEAD (its answer has no body). Resolves when the server closed, or with
 * `closed: false` after `timeoutMs`.
 */
export function rawExchange(url: string, bytes: Buffer, opts: { head?: boolean; end?: boolean; timeoutMs?: number } = {}): Promise<{ answers: RawAnswer[]; closed: boolean }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let got = Buffer.alloc(0);
    const answers: RawAnswer[] = [];
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ answers, closed });
    };
    const timer = setTimeout(() => finish(false), opts.timeoutMs ?? 5000);
    socket.on('data', (d) => {
      got = Buffer.concat([got, d]);
      for (let next = takeAnswer(got, opts.head === true); next; next = takeAnswer(got, opts.head === true)) {
        got = got.subarray(next.used);
        if (next.answer.status >= 200 || next.answer.status === 101) answers.push(next.answer);
        if (next.streaming) return finish(true);
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      // An answer without a length ends with the connection.
      const last = takeAnswer(got, opts.head === true, true);
      if (last) answers.push(last.answer);
      finish(true);
    });
    socket.write(bytes);
    if (opts.end) socket.end();
  });
}

/** The first complete answer in `buf` and the bytes it took, or null while it is incomplete (`closed`: the connection ended, so is a body without a length). */
function takeAnswer(buf: Buffer, head: boolean, closed = false): { answer: RawAnswer; used: number; streaming: boolean } | null {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine, ...lines] = buf.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine!)?.[1] ?? 0);
  const headers = new Map<string, string[]>();
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
  }
  const start = end + 4;
  const answer = (body: Buffer, used: number, streaming = false) => ({ answer: { status, headers, body }, used, streaming });
  if (status === 101 || (headers.get('content-type')?.[0] ?? '').startsWith('text/event-stream')) return answer(Buffer.alloc(0), start, true);
  if (head || status < 200 || status === 204 || status === 304) return answer(Buffer.alloc(0), start);
  if ((headers.get('transfer-encoding')?.[0] ?? '').toLowerCase() === 'chunked') {
    const parts: Buffer[] = [];
    for (let at = start; ; ) {
      const lineEnd = buf.indexOf('\r\n', at);
      if (lineEnd < 0) return null;
      const size = parseInt(buf.subarray(at, lineEnd).toString('latin1'), 16);
      if (size === 0) return buf.length >= lineEnd + 4 ? answer(Buffer.concat(parts), lineEnd + 4) : null;
      if (buf.length < lineEnd + 2 + size + 2) return null;
      parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
  }
  const length = Number(headers.get('content-length')?.[0] ?? NaN);
  if (!Number.isFinite(length)) return closed ? answer(buf.subarray(start), buf.length) : null;
  return buf.length >= start + length ? answer(buf.subarray(start, start + length), start + length) : null;
}
