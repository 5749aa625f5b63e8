import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLineLogger, createLogger } from '../../src/log.ts';

function capture(level = 'info') {
  const lines: string[] = [];
  const logger = createLogger(level, { write: (line: string) => void lines.push(line) });
  return { logger, lines };
}

test('a hand-built line is the line pino writes for the same fields', () => {
  const { logger, lines } = capture();
  const fields = { req_id: 'f32e4fab', method: 'GET', path: '/v1/invoices/"quoted"\n\u00e9', status: 200, ms: 1.5, key_id: 'key_1' };
  logger.info(fields, 'request');
  createLineLogger(logger, 'request')(fields);
  assert.equal(lines.length, 2);
  const [fromPino, byHand] = lines.map((l) => {
    assert.ok(l.endsWith('}\n'), 'one JSON object a line');
    return JSON.parse(l) as Record<string, unknown>;
  });
  assert.match(String(byHand!.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.ok(Math.abs(Date.parse(String(byHand!.time)) - Date.parse(String(fromPino!.time))) < 1000);
  assert.deepEqual(Object.keys(byHand!), Object.keys(fromPino!), 'same fields in the same order');
  assert.deepEqual({ ...byHand, time: 0 }, { ...fromPino, time: 0 });
});

test('a child logger\'s bindings are written as pino writes them', () => {
  const { logger, lines } = capture();
  const child = logger.child({ component: 'webhooks' });
  child.info({ attempt: 1 }, 'webhook attempt');
  createLineLogger(child, 'webhook attempt')({ attempt: 1 });
  const [fromPino, byHand] = lines.map((l) => ({ ...JSON.parse(l), time: 0 }));
  assert.equal(byHand.component, 'webhooks');
  assert.deepEqual(Object.entries(byHand!), Object.entries(fromPino!));
});

test('undefined fields are left out, as pino leaves them out; null is kept', () => {
  const { logger, lines } = capture();
  createLineLogger(logger, 'webhook attempt')({ delivery_id: 'dlv_1', status_code: null, key_id: undefined });
  assert.deepEqual(JSON.parse(lines[0]!), { level: 30, time: JSON.parse(lines[0]!).time, delivery_id: 'dlv_1', status_code: null, msg: 'webhook attempt' });
});

test('nothing is written below the logger level', () => {
  for (const level of ['warn', 'silent']) {
    const { logger, lines } = capture(level);
    createLineLogger(logger, 'request')({ path: '/' });
    assert.deepEqual(lines, [], level);
  }
});
