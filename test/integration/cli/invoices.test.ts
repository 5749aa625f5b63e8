import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { listNewInvoices } from '../../../src/services/invoices.ts';
import { runTillBeside } from '../../helpers/cli.ts';
import { testTpub } from '../../helpers/keys.ts';
import { call, setupStore, startTestTill, type TestTill } from '../../helpers/till-server.ts';
import { createInvoice, receivePayment, simulate } from '../checkout/checkout-helpers.ts';

// `till invoices show` and `find`: an operator looking up what happened to an
// invoice, on the data dir of a running till (real CLI processes).

async function tillJsonBeside(till: TestTill, args: string[]): Promise<any> {
  const r = await runTillBeside(till, ['--json', ...args]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

/** A till with two stores; the first has a webhook endpoint and an invoice of order 1234 paid by two transactions. */
async function tillWithHistory(t: Parameters<typeof startTestTill>[0]) {
  const till = await startTestTill(t);
  // The shop's addresses are bech32, the other store's base58 (the test key's default).
  const shop = setupStore(till, { xpub: `wpkh(${testTpub('invoices-cli')})` });
  const other = setupStore(till);
  const endpoint = await call(till, 'POST', `/v1/stores/${shop.storeId}/webhooks`, { key: shop.key, body: { url: 'https://shop.example/hooks' } });
  assert.equal(endpoint.status, 201, endpoint.text);
  const order = await createInvoice(till, shop, { amount_sats: 10_000, metadata: { order_id: '1234', customer: 'bob' }, callback_url: 'https://shop.example/cb' });
  await receivePayment(till, order.id, 4_000, 'ab');
  await receivePayment(till, order.id, 6_000, 'cd');
  // Newest first is by id, whose time part is the creation's millisecond: the test clock moves between them.
  till.clock.advance(1000);
  // A note as a shop might copy it from a buyer: text that reads like lines of the report.
  const unpaid = await createInvoice(till, shop, { amount_sats: 5_000, metadata: { order_id: '1235', 'buyer note': `thanks!\npayments\n  ${'ef'.repeat(32)}:0  5,000 sats  confirmed` } });
  till.clock.advance(1000);
  const elsewhere = await createInvoice(till, other, { amount_sats: 7_000, metadata: { order_id: '1234' } });
  await simulate(till, other, elsewhere.id, 'paid');
  return { till, shop, other, order, unpaid, elsewhere };
}

describe('till invoices', () => {
  test('show: the invoice, its payments, and each event with its webhook deliveries', async (t) => {
    const { till, shop, order, unpaid } = await tillWithHistory(t);
    const shown = await tillJsonBeside(till, ['invoices', 'show', order.id]);
    assert.equal(shown.id, order.id);
    assert.equal(shown.store_id, shop.storeId);
    assert.equal(shown.amount_received_sats, 10_000);
    assert.deepEqual(shown.payments.map((p: any) => [p.txid, p.amount_sats, p.status]), [['ab'.repeat(32), 4_000, 'mempool'], ['cd'.repeat(32), 6_000, 'mempool']]);
    assert.deepEqual(shown.metadata, { order_id: '1234', customer: 'bob' });
    const stored = till.rt.ctx.repos.invoices.get(order.id)!;
    assert.deepEqual([shown.xpub_id, shown.address_index], [stored.xpubId, stored.addressIndex], 'which key and index the address came from');
    // Oldest first; each event went to the endpoint and to the invoice's callback_url.
    assert.deepEqual(shown.events.map((e: any) => e.type), ['invoice.created', 'invoice.payment_detected', 'invoice.payment_detected']);
    for (const e of shown.events) {
      assert.deepEqual(e.deliveries.map((d: any) => d.url).sort(), ['https://shop.example/cb', 'https://shop.example/hooks'], e.type);
      assert.ok(e.deliveries.every((d: any) => d.event_id === e.id && d.status === 'attempting'), e.type);
    }

    const human = await runTillBeside(till, ['invoices', 'show', order.id]);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, new RegExp(`^${order.id}  pending  test  store ${shop.storeId}$`, 'm'));
    assert.match(human.stdout, /^received  10,000 sats, 0 sats confirmed \(1 confirmation required\)$/m);
    assert.match(human.stdout, new RegExp(`^address   ${order.address} \\(key ${stored.xpubId}, index ${stored.addressIndex}\\)$`, 'm'));
    assert.match(human.stdout, /^metadata  order_id=1234  customer=bob$/m);

    // The shop's text stays on its line, quoted: it cannot add a payment to the report.
    const noted = await runTillBeside(till, ['invoices', 'show', unpaid.id]);
    assert.equal(noted.code, 0, noted.stderr);
    assert.match(noted.stdout, new RegExp(`^metadata  order_id=1235  "buyer note"="thanks!\\\\npayments\\\\n  ${'ef'.repeat(32)}:0  5,000 sats  confirmed"$`, 'm'));
    assert.deepEqual(noted.stdout.split('\n').filter((line) => /^payments$|^ {2}\(none\)$/.test(line)), ['payments', '  (none)']);
    assert.match(human.stdout, new RegExp(`^  ${'cd'.repeat(32)}:0  6,000 sats  mempool  first seen `, 'm'));
    assert.match(human.stdout, /^ {2}\S+  invoice\.payment_detected  evt_\S+$/m);
    assert.match(human.stdout, /^ {4}dlv_\S+  attempting  0 tries  -  https:\/\/shop\.example\/hooks$/m);
  });

  test('find: by a paying transaction, by address, by an order reference (in one store or all), or a store\'s newest', async (t) => {
    const { till, shop, other, order, unpaid, elsewhere } = await tillWithHistory(t);
    const ids = async (args: string[]) => (await tillJsonBeside(till, ['invoices', 'find', ...args])).map((v: any) => v.id);
    assert.deepEqual(await ids(['--txid', 'CD'.repeat(32)]), [order.id], 'a txid in either case');
    assert.deepEqual(await ids(['--txid', 'ef'.repeat(32)]), []);
    assert.deepEqual(await ids(['--address', unpaid.address]), [unpaid.id]);
    assert.match(unpaid.address, /^bcrt1/);
    assert.deepEqual(await ids(['--address', unpaid.address.toUpperCase()]), [unpaid.id], 'a bech32 address in upper case, as QR codes carry it');
    assert.deepEqual(await ids(['--address', elsewhere.address.toUpperCase()]), [], 'a base58 one is case-sensitive');
    assert.deepEqual(await ids(['--address', elsewhere.address]), [elsewhere.id]);
    assert.deepEqual(await ids(['--metadata', 'order_id=1234']), [elsewhere.id, order.id], 'newest first, every store');
    assert.deepEqual(await ids(['--metadata', 'order_id=123']), [], 'the whole value, not a part');
    assert.deepEqual(await ids(['--metadata', 'customer=bob', '--txid', 'ab'.repeat(32)]), [order.id], 'everything given must match');
    // A store's newest come from the invoices themselves until the server lists them (migration 0016), then from the list.
    for (const listed of [false, true]) {
      if (listed) await listNewInvoices(till.rt.ctx);
      assert.equal(till.rt.ctx.repos.invoices.hasUnlisted(), !listed);
      assert.deepEqual(await ids(['--metadata', 'order_id=1234', '--store', shop.storeId]), [order.id]);
      assert.deepEqual(await ids(['--store', shop.storeId, '--limit', '1']), [unpaid.id]);
      assert.deepEqual(await ids(['--store', other.storeId]), [elsewhere.id]);
    }
    // Newest first whatever their statuses (the list holds each status apart).
    assert.equal((await call(till, 'POST', `/v1/invoices/${unpaid.id}/cancel`, { key: shop.key })).status, 200);
    assert.deepEqual(await ids(['--store', shop.storeId]), [unpaid.id, order.id]);
    assert.deepEqual(await ids(['--store', shop.storeId, '--metadata', 'order_id=1234']), [order.id]);

    const human = await runTillBeside(till, ['invoices', 'find', '--metadata', 'order_id=1234']);
    assert.equal(human.code, 0, human.stderr);
    assert.deepEqual(human.stdout.trim().split('\n').map((line) => line.split(/\s{2,}/).slice(0, 5)), [
      [elsewhere.id, 'paid', 'test', '7,000 sats', 'received 7,000'],
      [order.id, 'pending', 'test', '10,000 sats', 'received 10,000'],
    ]);
    const none = await runTillBeside(till, ['invoices', 'find', '--address', 'bcrt1qnothing']);
    assert.deepEqual([none.code, none.stdout], [0, '(none)\n']);

    // A pair as `show` prints it, JSON-quoted where it holds a space, a line break, `=` or a quote, is found as it reads.
    const shown = (await runTillBeside(till, ['invoices', 'show', unpaid.id])).stdout;
    const pair = /^metadata  .*?("buyer note"=".*?[^\\]")(?:  |$)/m.exec(shown)?.[1];
    assert.ok(pair, shown);
    assert.deepEqual(await ids(['--metadata', pair]), [unpaid.id]);
    assert.deepEqual(await ids(['--metadata', 'order_id="1235"']), [unpaid.id], 'a plain value quoted all the same');
  });

  const refusals: Array<[string, string[], RegExp]> = [
    ['an unknown invoice', ['show', 'inv_00000000000000000000000000'], /^till: no invoice inv_00000000000000000000000000$/m],
    ['not an invoice id', ['show', 'sto_x'], /^till: no invoice sto_x$/m],
    ['nothing to find by', ['find'], /^till: give --txid, --address, --metadata or --store$/m],
    ['a txid that is not one', ['find', '--txid', 'abc'], /^till: --txid must be a transaction id: 64 hexadecimal characters/m],
    ['an empty address', ['find', '--address', ''], /^till: --address must be a Bitcoin address \(letters and digits only\)/m],
    ['an address with a space in it', ['find', '--address', 'bc1q abc'], /^till: --address must be a Bitcoin address/m],
    ['a metadata pair without a key', ['find', '--metadata', '=1234'], /^till: --metadata must be key=value \(order_id=1234\)/m],
    ['a metadata pair without =', ['find', '--metadata', 'order_id'], /^till: --metadata must be key=value/m],
    ['a quoted key without its end', ['find', '--metadata', '"order_id=1234'], /^till: --metadata must be key=value \(order_id=1234\), each part as till invoices show prints it/m],
    ['a quoted value with more after it', ['find', '--metadata', 'order_id="12"34'], /^till: --metadata must be key=value/m],
    ['an empty quoted key', ['find', '--metadata', '""=1234'], /^till: --metadata must be key=value/m],
    ['an unknown store', ['find', '--store', 'sto_nothing'], /^till: no store sto_nothing$/m],
    ['a limit out of range', ['find', '--store', 'sto_x', '--limit', '0'], /^till: --limit must be from 1 to 10000/m],
  ];
  test('refuses what it cannot look up with one line, exit code 1 and nothing on stdout', async (t) => {
    const { till } = await tillWithHistory(t);
    for (const [what, args, message] of refusals) {
      const r = await runTillBeside(till, ['invoices', ...args]);
      assert.equal(r.code, 1, `${what}: ${r.stderr}`);
      assert.match(r.stderr, message, what);
      assert.equal(r.stdout, '', what);
    }
  });
});
