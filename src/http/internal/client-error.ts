import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';

// Requests Node's HTTP parser refuses (a Content-Length beside
// Transfer-Encoding: chunked, bytes after a short Content-Length, a bad
// chunk size) never reach the app. Node would answer a bare "400 Bad
// Request"; this answers them in the error envelope too, with a request id.

const REFUSALS: Record<string, { status: number; reason: string; code: string; message: string }> = {
  HPE_HEADER_OVERFLOW: { status: 400, reason: 'Bad Request', code: 'validation_error', message: 'the request headers are too large' },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { status: 413, reason: 'Payload Too Large', code: 'payload_too_large', message: 'the chunk extensions are too large' },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 400, reason: 'Bad Request', code: 'validation_error', message: 'the request was not received in time' },
};
const MALFORMED = { status: 400, reason: 'Bad Request', code: 'validation_error', message: 'the request is not valid HTTP/1.1' };

/** A node:http server 'clientError' listener: the envelope if nothing was sent yet, then close. */
export function answerClientError(err: Error & { code?: string }, socket: Socket): void {
  if (err.code !== 'ECONNRESET' && socket.writable && socket.bytesWritten === 0) {
    const r = REFUSALS[err.code ?? ''] ?? MALFORMED;
    const requestId = randomUUID();
    const body = JSON.stringify({ error: { code: r.code, message: r.message, request_id: requestId } });
    socket.write(
      `HTTP/1.1 ${r.status} ${r.reason}\r\nContent-Type: application/json; charset=utf-8\r\nX-Request-Id: ${requestId}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
