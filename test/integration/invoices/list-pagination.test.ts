// GET /v1/invoices (DESIGN "List") and GET /v1/invoices/:id: newest first,
// cursors that walk every invoice exactly once both ways, filters, and
// 400 validation_error naming the bad parameter; only the key's store and
// environment are visible. The walks run with none, half or all of the
// invoices in the list table (migration 0016: the server lists new invoices a
// few times a second; until then a list reads them from the invoices).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { toIso } from '../../../src/clock.ts';
import { mintApiKey } from '../../../src/services/api-keys.ts';
import { listNewInvoices } from '../../../src/services/invoices.ts';
import { updateStore } from '../../../src/services/stores.ts';
import { addXpub } from '../../../src/services/xpubs.ts';
import { testTpub } from '../../helpers/keys.ts';
import { call, setupStore, startTestTill, TRANSPORTS } from '../../helpers/till-server.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { assertError, assertInvoice, assertRequestId, postInvoice, useTill } from './invoice-api.ts';

const TOTAL = 250;
const BATCH = 25;

interface Page {
  data: Array<{ id: string; created_at: string; status: string; livemode: boolean; store_id: string }>;
  has_more: boolean;
}

// When the invoices are copied into the list table: never, after the first half of the batches, after all of them.
const LISTINGS = { none: Infinity, half: TOTAL / BATCH / 2, all: TOTAL / BATCH } as const;

for (const [listing, listAfter] of Object.entries(LISTINGS)) describe(`list pagination over 250 invoices (socket, ${listing} listed)`, () => {
  const till = useTill();
  let key = '';
  /** Ids newest first, as the list must return them. */
  let newestFirst: string[] = [];
  const createdAt = new Map<string, number>();

  async function page(query: string): Promise<Page> {
    const res = await call(till(), 'GET', `/v1/invoices?${query}`, { key });
    assert.equal(res.status, 200, res.text.slice(0, 300));
    assertRequestId(res);
    assert.equal(res.body.object, 'list');
    return res.body as Page;
  }

  test('create 250 invoices through the API, 25 at a time, one second apart', async () => {
    const s = setupStore(till());
    key = s.key;
    const created: Array<{ id: string; created_at: string }> = [];
    for (let b = 0; b < TOTAL / BATCH; b++) {
      // A minute apart per 100 keeps the batch inside the rate limit.
      if (b > 0 && b % 4 === 0) till().clock.advance(60_000);
      const results = await Promise.all(Array.from({ length: BATCH }, (_, i) => postInvoice(till(), key, { amount_sats: 1000 + b * BATCH + i })));
      created.push(...results.map((r) => assertInvoice(r) as { id: string; created_at: string }));
      till().clock.advance(1000);
      if (b + 1 === listAfter) assert.equal(await listNewInvoices(till().rt.ctx), (b + 1) * BATCH);
    }
    assert.equal(till().rt.ctx.repos.invoices.hasUnlisted(), listing !== 'all');
    // Newest first: by creation time, ties (one batch, one millisecond) by id.
    newestFirst = created
      .sort((a, b) => (a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1))
      .map((inv) => inv.id);
    assert.equal(new Set(newestFirst).size, TOTAL);
    for (const inv of created) createdAt.set(inv.id, Date.parse(inv.created_at));
  });

  /** Every invoice by starting_after cursors, newest first, checking each page's has_more. */
  async function walkForward(limit: number): Promise<{ seen: string[]; pages: number }> {
    const seen: string[] = [];
    let query = `limit=${limit}`;
    let pages = 0;
    for (let n = 0; n < TOTAL; n++) {
      const p = await page(query);
      pages++;
      assert.ok(p.data.length <= limit);
      seen.push(...p.data.map((inv) => inv.id));
      assert.equal(p.has_more, seen.length < TOTAL, `has_more after ${seen.length}`);
      if (!p.has_more) break;
      query = `limit=${limit}&starting_after=${p.data.at(-1)!.id}`;
    }
    return { seen, pages };
  }

  /** Every invoice newer than the oldest by ending_before cursors, put back newest first. */
  async function walkBack(limit: number): Promise<string[]> {
    const seen: string[] = [];
    let cursor = newestFirst.at(-1)!;
    for (let n = 0; n < TOTAL; n++) {
      const p = await page(`limit=${limit}&ending_before=${cursor}`);
      // Each page is itself newest first, and holds the invoices just newer than the cursor.
      seen.unshift(...p.data.map((inv) => inv.id));
      assert.equal(p.has_more, seen.length < TOTAL - 1, `has_more after ${seen.length}`);
      if (!p.has_more) break;
      cursor = p.data[0]!.id;
    }
    return seen;
  }

  for (const limit of [20, 100]) {
    test(`starting_after walks all 250 exactly once, newest first, pages of ${limit}`, async () => {
      const { seen, pages } = await walkForward(limit);
      assert.deepEqual(seen, newestFirst);
      assert.equal(pages, Math.ceil(TOTAL / limit));
    });

    test(`ending_before walks back from the oldest to the newest, pages of ${limit}`, async () => {
      assert.deepEqual(await walkBack(limit), newestFirst.slice(0, -1));
    });
  }

  test('default page size is 20; has_more is right at both ends', async () => {
    const first = await page('');
    assert.equal(first.data.length, 20);
    assert.equal(first.has_more, true);
    assert.deepEqual(first.data.map((i) => i.id), newestFirst.slice(0, 20));
    // The newest invoice has nothing before it; the oldest nothing after it.
    const first0 = await page(`ending_before=${newestFirst[0]}`);
    assert.deepEqual([first0.data.length, first0.has_more], [0, false]);
    const last = await page(`starting_after=${newestFirst.at(-1)}`);
    assert.deepEqual([last.data.length, last.has_more], [0, false]);
    // Exactly a page left: has_more false.
    const tail = await page(`limit=20&starting_after=${newestFirst[TOTAL - 21]}`);
    assert.deepEqual([tail.data.length, tail.has_more], [20, false]);
    const tailPlusOne = await page(`limit=20&starting_after=${newestFirst[TOTAL - 22]}`);
    assert.deepEqual([tailPlusOne.data.length, tailPlusOne.has_more], [20, true]);
    const head = await page(`limit=100&ending_before=${newestFirst[100]}`);
    assert.deepEqual([head.data.length, head.has_more], [100, false]);
    assert.deepEqual(head.data.map((i) => i.id), newestFirst.slice(0, 100));
    const headLess = await page(`limit=100&ending_before=${newestFirst[101]}`);
    assert.deepEqual([headLess.data.length, headLess.has_more], [100, true]);
    assert.deepEqual(headLess.data.map((i) => i.id), newestFirst.slice(1, 101));
  });

  test('created_gte / created_lte, as ISO 8601 and as Unix seconds', async () => {
    const inRange = (from: number, to: number) => newestFirst.filter((id) => createdAt.get(id)! >= from && createdAt.get(id)! <= to);
    const batchTimes = [...new Set(createdAt.values())].sort((a, b) => a - b);
    assert.equal(batchTimes.length, TOTAL / BATCH);
    const from = batchTimes[2]!;
    const to = batchTimes[5]!;
    for (const [gte, lte] of [
      [toIso(from), toIso(to)],
      [String(from / 1000), String(to / 1000)],
      [toIso(from).replace('Z', '+00:00'), String(to / 1000)],
    ] as const) {
      const p = await page(`limit=100&created_gte=${encodeURIComponent(gte)}&created_lte=${encodeURIComponent(lte)}`);
      assert.equal(p.data.length, 4 * BATCH);
      assert.deepEqual(p.data.map((i) => i.id), inRange(from, to));
    }
    assert.deepEqual((await page(`limit=100&created_gte=${toIso(batchTimes.at(-1)!)}`)).data.map((i) => i.id), newestFirst.slice(0, BATCH));
    assert.deepEqual((await page(`limit=100&created_lte=${toIso(batchTimes[0]!)}`)).data.map((i) => i.id), newestFirst.slice(-BATCH));
    assert.deepEqual((await page(`created_gte=${toIso(batchTimes.at(-1)! + 1)}`)).data, []);
    // A filter with a cursor: the range in two pages.
    const range = `created_gte=${from / 1000}&created_lte=${to / 1000}`;
    const p1 = await page(`limit=30&${range}`);
    assert.equal(p1.has_more, true);
    const p2 = await page(`limit=100&${range}&starting_after=${p1.data.at(-1)!.id}`);
    assert.equal(p2.has_more, false);
    assert.deepEqual([...p1.data, ...p2.data].map((i) => i.id), inRange(from, to));
  });

  test('status filter', async () => {
    // Cancel three, pay two (simulate), then filter.
    const cancelled = newestFirst.slice(10, 13);
    const paid = newestFirst.slice(40, 42);
    for (const id of cancelled) assert.equal((await call(till(), 'POST', `/v1/invoices/${id}/cancel`, { key })).status, 200);
    for (const id of paid) assert.equal((await call(till(), 'POST', `/v1/invoices/${id}/simulate`, { key, body: { event: 'paid' } })).status, 200);
    assert.deepEqual((await page('status=cancelled')).data.map((i) => i.id), cancelled);
    assert.deepEqual((await page('status=paid')).data.map((i) => i.id), paid);
    assert.deepEqual((await page('status=expired')).data, []);
    const pending = await page('status=pending&limit=100');
    assert.equal(pending.has_more, true);
    assert.ok(pending.data.every((i) => i.status === 'pending' && !cancelled.includes(i.id) && !paid.includes(i.id)));
  });

  test('with statuses mixed all through, both walks still return every invoice once, in order', async () => {
    // One index per status serves the unfiltered list: its pages merge them.
    for (const [i, id] of newestFirst.entries()) {
      const current = (await call(till(), 'GET', `/v1/invoices/${id}`, { key })).body.status;
      if (current !== 'pending') continue;
      if (i % 7 === 3) assert.equal((await call(till(), 'POST', `/v1/invoices/${id}/cancel`, { key })).status, 200);
      else if (i % 5 === 1) assert.equal((await call(till(), 'POST', `/v1/invoices/${id}/simulate`, { key, body: { event: 'paid' } })).status, 200);
    }
    const statuses = new Set((await page('limit=100')).data.map((i) => i.status));
    assert.deepEqual([...statuses].sort(), ['cancelled', 'paid', 'pending']);
    for (const limit of [7, 20]) {
      assert.deepEqual((await walkForward(limit)).seen, newestFirst);
      assert.deepEqual(await walkBack(limit), newestFirst.slice(0, -1));
    }
  });
});

test('a running till lists new invoices within a moment, and a list shows them before and after', async (t) => {
  const till = await startTestTill(t, { transport: 'socket', startWorkers: true });
  const { key } = setupStore(till);
  const ids = (await Promise.all(Array.from({ length: 30 }, (_, i) => postInvoice(till, key, { amount_sats: 1000 + i })))).map((r) => assertInvoice(r).id as string);
  const listedIds = async () => ((await call(till, 'GET', '/v1/invoices?limit=100', { key })).body.data as Array<{ id: string }>).map((inv) => inv.id).sort();
  assert.deepEqual(await listedIds(), [...ids].sort());
  await waitFor(() => !till.rt.ctx.repos.invoices.hasUnlisted(), 'the invoices listed by the server');
  assert.deepEqual(await listedIds(), [...ids].sort());
});

test('a list mark deleted by hand: the next listing skips what is listed, lists the rest and sets the mark again', async (t) => {
  const till = await startTestTill(t, { transport: 'socket' });
  const { key } = setupStore(till);
  const create = async (n: number) => (await Promise.all(Array.from({ length: n }, (_, i) => postInvoice(till, key, { amount_sats: 1000 + i })))).map((r) => assertInvoice(r).id as string);
  const listedIds = async () => ((await call(till, 'GET', '/v1/invoices?limit=100', { key })).body.data as Array<{ id: string }>).map((inv) => inv.id).sort();
  const { ctx } = till.rt;
  const first = await create(5);
  assert.equal(await listNewInvoices(ctx), 5);
  ctx.db.prepare("DELETE FROM meta WHERE key = 'invoices_listed_through'").run();
  const later = await create(3);
  assert.equal(ctx.repos.invoices.hasUnlisted(), true);
  assert.equal(await listNewInvoices(ctx), 3, 'the five listed before are skipped');
  assert.equal(ctx.repos.invoices.hasUnlisted(), false);
  assert.deepEqual(await listedIds(), [...first, ...later].sort(), 'each once');
});

for (const transport of TRANSPORTS) {
  describe(`list and fetch scope, bad parameters (${transport})`, () => {
    const till = useTill({ transport });

    test('a key sees only its store and environment: another store or environment is 404 not_found', async () => {
      const a = setupStore(till());
      const b = setupStore(till());
      const invA = assertInvoice(await postInvoice(till(), a.key, { amount_sats: 1000 }));
      const invB = assertInvoice(await postInvoice(till(), b.key, { amount_sats: 2000 }));

      const fetched = await call(till(), 'GET', `/v1/invoices/${invA.id}`, { key: a.key });
      assert.equal(fetched.status, 200);
      assertRequestId(fetched);
      assert.equal(fetched.text, JSON.stringify(invA));

      // Fetched by its own key first, so its view is cached: another store's key still gets 404.
      assert.equal((await call(till(), 'GET', `/v1/invoices/${invB.id}`, { key: b.key })).status, 200);
      assertError(await call(till(), 'GET', `/v1/invoices/${invB.id}`, { key: a.key }), 404, 'not_found');
      assertError(await call(till(), 'POST', `/v1/invoices/${invB.id}/cancel`, { key: a.key }), 404, 'not_found');
      assertError(await call(till(), 'POST', `/v1/invoices/${invB.id}/simulate`, { key: a.key, body: { event: 'paid' } }), 404, 'not_found');
      assert.deepEqual((await call(till(), 'GET', '/v1/invoices', { key: a.key })).body.data.map((i: { id: string }) => i.id), [invA.id]);

      // Store a goes live: its live key sees none of the test invoices, and vice versa.
      updateStore(till().rt.ctx, a.storeId, { mode: 'live' });
      addXpub(till().rt.ctx, { storeId: a.storeId, env: 'live', key: testTpub(`live-${a.storeId}`) });
      const live = mintApiKey(till().rt.ctx, a.storeId, 'live');
      const invLive = assertInvoice(await postInvoice(till(), live.key, { amount_sats: 3000 }));
      assert.equal(invLive.livemode, true);
      assertError(await call(till(), 'GET', `/v1/invoices/${invA.id}`, { key: live.key }), 404, 'not_found');
      assert.deepEqual((await call(till(), 'GET', '/v1/invoices', { key: live.key })).body.data.map((i: { id: string }) => i.id), [invLive.id]);
      assert.equal((await call(till(), 'GET', `/v1/invoices/${invLive.id}`, { key: live.key })).status, 200);
      updateStore(till().rt.ctx, a.storeId, { mode: 'test' });
      assertError(await call(till(), 'GET', `/v1/invoices/${invLive.id}`, { key: a.key }), 404, 'not_found');
      assert.deepEqual((await call(till(), 'GET', '/v1/invoices', { key: a.key })).body.data.map((i: { id: string }) => i.id), [invA.id]);
    });

    test("a cursor naming no invoice this key lists (unknown, another store's, the other mode's) is 400 naming it, not a page placed anywhere", async () => {
      const a = setupStore(till());
      const b = setupStore(till());
      const invA = assertInvoice(await postInvoice(till(), a.key, { amount_sats: 1000 }));
      const invB = assertInvoice(await postInvoice(till(), b.key, { amount_sats: 2000 }));
      const unknown = 'inv_00000000000000000000000000';
      for (const param of ['starting_after', 'ending_before']) {
        for (const id of [unknown, invB.id]) {
          const r = await call(till(), 'GET', `/v1/invoices?${param}=${id}`, { key: a.key });
          assertError(r, 400, 'validation_error', param);
          assert.match(r.body.error.message, /must be the id of an invoice that this key lists \(its store, test mode\)/);
        }
        const own = await call(till(), 'GET', `/v1/invoices?${param}=${invA.id}`, { key: a.key });
        assert.deepEqual([own.status, own.body.data], [200, []]);
      }
      updateStore(till().rt.ctx, a.storeId, { mode: 'live' });
      addXpub(till().rt.ctx, { storeId: a.storeId, env: 'live', key: testTpub(`live-${a.storeId}`) });
      const live = mintApiKey(till().rt.ctx, a.storeId, 'live');
      const r = await call(till(), 'GET', `/v1/invoices?starting_after=${invA.id}`, { key: live.key });
      assert.match(String(assertError(r, 400, 'validation_error', 'starting_after').message), /\(its store, live mode\)/);
    });

    test('a time names its whole last unit: created_lte=N (or an ISO second, minute, day) includes N.500, created_gte=N+1 excludes it', async () => {
      const s = setupStore(till());
      till().clock.set(Date.parse('2027-01-01T00:00:00.000Z') + 500);
      const inv = assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }));
      const second = Date.parse('2027-01-01T00:00:00.000Z') / 1000;
      const ids = async (query: string) => (await call(till(), 'GET', `/v1/invoices?${query}`, { key: s.key })).body.data.map((i: { id: string }) => i.id);
      assert.deepEqual(await ids(`created_lte=${second}`), [inv.id]);
      assert.deepEqual(await ids(`created_gte=${second}&created_lte=${second}`), [inv.id]);
      assert.deepEqual(await ids(`created_gte=${second + 1}`), []);
      assert.deepEqual(await ids(`created_lte=${second - 1}`), []);
      // ISO times with milliseconds are instants.
      assert.deepEqual(await ids('created_lte=2027-01-01T00:00:00.499Z'), []);
      assert.deepEqual(await ids('created_lte=2027-01-01T01:00:00.500%2B01:00'), [inv.id]);
      assert.deepEqual(await ids('created_gte=2027-01-01'), [inv.id]);
      // Coarser ISO times name their whole unit in created_lte, as Unix seconds do.
      const lte: Array<[string, string[]]> = [
        ['2027-01-01T00:00:00Z', [inv.id]],
        ['2027-01-01T00:00Z', [inv.id]],
        ['2027-01-01', [inv.id]],
        ['2026-12-31', []],
        ['2027-01-01T00:00:00.4Z', []],
        ['2027-01-01T00:00:00.5Z', [inv.id]],
        ['2027-01-01T00:00:00.49Z', []],
        ['2026-12-31T23:59:59Z', []],
      ];
      for (const [time, expected] of lte) assert.deepEqual(await ids(`created_lte=${time}`), expected, time);
      assertError(await call(till(), 'GET', '/v1/invoices?created_lte=2026-12-31T24:00Z', { key: s.key }), 400, 'validation_error');
    });

    test('created_lte spans end on their last millisecond: of a tenth, a minute, a day', async () => {
      const s = setupStore(till());
      const at = async (iso: string) => {
        till().clock.set(Date.parse(iso));
        return assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 })).id as string;
      };
      const tenth = await at('2027-03-01T00:00:00.499Z');
      const minute = await at('2027-03-01T00:00:59.999Z');
      const nextMinute = await at('2027-03-01T00:01:00.000Z');
      const day = await at('2027-03-01T23:59:59.999Z');
      await at('2027-03-02T00:00:00.000Z');
      const ids = async (lte: string) => (await call(till(), 'GET', `/v1/invoices?created_lte=${lte}`, { key: s.key })).body.data.map((i: { id: string }) => i.id);
      const cases: Array<[string, string[]]> = [
        ['2027-03-01T00:00:00.4Z', [tenth]],
        ['2027-03-01T00:00:00.4990Z', [tenth]],
        ['2027-03-01T00:00:00.4989Z', []],
        ['2027-03-01T00:00Z', [minute, tenth]],
        ['2027-03-01', [day, nextMinute, minute, tenth]],
      ];
      for (const [lte, expected] of cases) assert.deepEqual(await ids(lte), expected, lte);
    });

    test('unknown or malformed invoice ids -> 404 not_found', async () => {
      const s = setupStore(till());
      for (const id of ['inv_00000000000000000000000000', 'nope', 'inv_%zz', '%E0%A4%A', encodeURIComponent('inv_ü')]) {
        assertError(await call(till(), 'GET', `/v1/invoices/${id}`, { key: s.key }), 404, 'not_found');
      }
    });

    const badQueries: Array<{ query: string; param: string; says?: RegExp }> = [
      { query: 'limit=0', param: 'limit' },
      { query: 'limit=101', param: 'limit' },
      { query: 'limit=abc', param: 'limit' },
      { query: 'limit=-1', param: 'limit' },
      { query: 'limit=1.5', param: 'limit' },
      { query: 'limit=', param: 'limit' },
      { query: 'limit=10&limit=20', param: 'limit' },
      { query: 'page=2', param: 'page', says: /^unknown query parameter "page"$/ },
      { query: 'starting_after=inv_nope', param: 'starting_after', says: /must be an invoice id/ },
      { query: 'starting_after=sto_01m7yrrt80fnhyht28gqjdpd3m', param: 'starting_after' },
      { query: 'ending_before=', param: 'ending_before' },
      { query: 'starting_after=inv_01m7yrrt80e8j39nqjvjgrc36e&ending_before=inv_01m7yrrt80e8j39nqjvjgrc36f', param: 'ending_before' },
      { query: 'status=open', param: 'status', says: /must be one of pending, paid, late_paid, cancelled, expired$/ },
      { query: 'status=PENDING', param: 'status' },
      { query: 'created_gte=yesterday', param: 'created_gte' },
      { query: 'created_lte=2026-13-45', param: 'created_lte' },
      { query: 'created_gte=1.5', param: 'created_gte' },
      { query: 'created_gte=12026-01-01', param: 'created_gte' },
      { query: 'created_gte=2026-02-30', param: 'created_gte' },
      { query: 'created_lte=2026-04-31T10:00:00Z', param: 'created_lte' },
      { query: 'created_lte=2026-11-00', param: 'created_lte' },
      { query: 'created_gte=2026-11-21T10:00:00', param: 'created_gte' },
      { query: 'created_gte=2026-11-21T25:00:00Z', param: 'created_gte' },
      { query: 'created_lte=', param: 'created_lte' },
    ];
    for (const b of badQueries) {
      test(`GET /v1/invoices?${b.query} -> 400 validation_error naming ${b.param}`, async () => {
        const s = setupStore(till());
        const error = assertError(await call(till(), 'GET', `/v1/invoices?${b.query}`, { key: s.key }), 400, 'validation_error', b.param);
        if (b.says) assert.match(String(error.message), b.says);
      });
    }
  });
}
