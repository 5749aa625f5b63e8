import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { SseBody } from '../../../src/http/internal/sse.ts';

// The server pipes an SseBody into the client's response. A client that stops
// reading must not make the server buffer without bound.

/** A response whose client reads nothing: every write stays buffered. */
function stalledResponse(): Writable {
  return new Writable({ write() {} });
}

const snapshot = (version: number) => ({ version, json: JSON.stringify({ id: 'inv_x', pad: 'x'.repeat(1000), version }) });

test('a client that stops reading is dropped once about 64 KiB wait unread', () => {
  const body = new SseBody();
  let gone = 0;
  body.onGone = () => gone++;
  const out = body.pipe(stalledResponse());
  let sent = 0;
  while (!out.destroyed && sent < 1000) body.send(snapshot(++sent));
  assert.equal(out.destroyed, true, 'the response was destroyed');
  assert.ok(sent > 50 && sent < 80, `dropped after ${sent} snapshots of ~1 KiB`);
  assert.equal(gone, 1, 'the stream is told once');
  body.send(snapshot(++sent));
  body.heartbeat();
  assert.equal(gone, 1);
});

test('what is written before the body is piped goes out first, in order', () => {
  const body = new SseBody();
  body.send(snapshot(1));
  const chunks: string[] = [];
  body.pipe(new Writable({ write(chunk, _enc, done) { chunks.push(String(chunk)); done(); } }));
  body.send(snapshot(2));
  assert.match(chunks[0]!, /^retry: \d+\n\n$/);
  assert.match(chunks[1]!, /^id: 1\nevent: invoice\ndata: /);
  assert.match(chunks[2]!, /^id: 2\n/);
});

test('a client that goes away ends the stream once; ending it from the server does not count as gone', async () => {
  const tick = () => new Promise((r) => setImmediate(r));
  const body = new SseBody();
  let gone = 0;
  body.onGone = () => gone++;
  body.pipe(new Writable({ write(_c, _e, done) { done(); } })).destroy();
  await tick();
  assert.equal(gone, 1);
  body.send(snapshot(1));
  assert.equal(gone, 1);

  const ended = new SseBody();
  let endedGone = 0;
  ended.onGone = () => endedGone++;
  const out = ended.pipe(new Writable({ write(_c, _e, done) { done(); } }));
  ended.end();
  await tick();
  assert.equal(out.writableFinished, true, 'the response was ended');
  assert.equal(endedGone, 0);
});
