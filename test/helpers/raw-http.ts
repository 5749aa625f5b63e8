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
