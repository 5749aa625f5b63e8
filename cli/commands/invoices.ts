import { Command, InvalidArgumentError, Option } from 'commander';
import type { StoredInvoice } from '../../src/db/invoices.ts';
import { invoiceView } from '../../src/domain/invoice-view.ts';
import { deliveryView } from '../../src/domain/webhook-views.ts';
import { toIso } from '../../src/clock.ts';
import { findInvoices, getInvoiceHistory } from '../../src/services/invoice-lookup.ts';
import { withContext } from '../context.ts';
import { lastAnswerOf } from './deliveries.ts';
import { emit, parseIntegerOption, plural, table } from '../output.ts';

// What an operator answers a buyer or the shop with: one invoice's whole
// story (payments, events, webhook deliveries), and invoices found by a
// transaction id, an address or an order reference in their metadata.

const sats = (n: number) => `${n.toLocaleString('en-US')} sats`;

/** The public invoice, and which of the store's keys and receive index its address came from (for reconciling with the wallet). */
function invoiceRecord(inv: StoredInvoice, baseUrl: string) {
  return { ...invoiceView(inv, baseUrl), xpub_id: inv.xpubId, address_index: inv.addressIndex };
}

function parseTxid(value: string): string {
  if (!/^[0-9a-fA-F]{64}$/.test(value)) throw new InvalidArgumentError('--txid must be a transaction id: 64 hexadecimal characters');
  return value.toLowerCase();
}

/** An address as Till stores it: a bech32 one in lower case (a QR code often carries it in upper case, BIP 173 allows either). */
function parseAddress(value: string): string {
  if (!/^[0-9A-Za-z]+$/.test(value)) throw new InvalidArgumentError('--address must be a Bitcoin address (letters and digits only)');
  return /^(bc|tb|bcrt)1/i.test(value) ? value.toLowerCase() : value;
}

/** A metadata key or value as `--metadata` takes it, JSON-quoted if it would not read back as one (spaces, `=`, a line break: the shop's text must not fake lines of the report). */
function quoted(text: string): string {
  return /^[^\s="\\]+$/.test(text) ? text : JSON.stringify(text);
}

/** `key=value`, each part plain or JSON-quoted, as `invoices show` prints a pair (quoted): a key holding `=` can be given. */
function parseMetadataPair(arg: string): { key: string; value: string } {
  const usage = () => new InvalidArgumentError('--metadata must be key=value (order_id=1234), each part as till invoices show prints it (JSON-quoted when it holds a space, =, a quote or a backslash)');
  const quotedKey = readQuoted(arg);
  const at = quotedKey ? quotedKey.end : arg.indexOf('=');
  if ((arg.startsWith('"') && !quotedKey) || at < 1 || arg[at] !== '=') throw usage();
  const key = quotedKey ? quotedKey.text : arg.slice(0, at);
  if (key === '') throw usage();
  const rest = arg.slice(at + 1);
  const quotedValue = readQuoted(rest);
  if (rest.startsWith('"') && quotedValue?.end !== rest.length) throw usage();
  return { key, value: quotedValue ? quotedValue.text : rest };
}

/** The JSON string `text` starts with: its text and where it ends; null if it starts with none. */
function readQuoted(text: string): { text: string; end: number } | null {
  if (!text.startsWith('"')) return null;
  for (let i = 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '"') {
      try {
        return { text: JSON.parse(text.slice(0, i + 1)) as string, end: i + 1 };
      } catch {
        return null;
      }
    }
  }
  return null;
}

export function invoicesCommand(): Command {
  const cmd = new Command('invoices').description('look up invoices: one with its payments, events and webhook deliveries, or those of a transaction, an address or an order (works on the database, any store, no API key)');

  cmd.command('show').description('one invoice with its payments, its events and each event\'s webhook deliveries').argument('<id>', 'invoice id (inv_…)')
    .action(function (this: Command, id: string) {
      const view = withContext(this, (ctx) => {
        const { invoice, events } = getInvoiceHistory(ctx, id);
        return {
          ...invoiceRecord(invoice, ctx.baseUrl),
          events: events.map(({ event, deliveries }) => ({ id: event.id, type: event.type, created_at: toIso(event.createdAt), deliveries: deliveries.map((d) => deliveryView(d)) })),
        };
      });
      emit(this.optsWithGlobals(), view, () => {
        const v = view;
        const fiat = v.amount ? ` (${v.amount} ${v.currency} at ${v.rate!.usd_per_btc} USD/BTC from ${v.rate!.source})` : '';
        const metadata = Object.entries(v.metadata).map(([k, x]) => `${quoted(k)}=${quoted(x)}`).join('  ');
        const closed = [['paid', v.paid_at], ['cancelled', v.cancelled_at], ['expired', v.expired_at]].filter(([, at]) => at !== null).map(([what, at]) => `${what} ${at}`);
        return [
          `${v.id}  ${v.status}  ${v.livemode ? 'live' : 'test'}  store ${v.store_id}`,
          `amount    ${sats(v.amount_sats)}${fiat}`,
          `received  ${sats(v.amount_received_sats)}, ${sats(v.amount_confirmed_sats)} confirmed (${plural(v.confirmations_required, 'confirmation')} required)`,
          `address   ${v.address} (key ${v.xpub_id}, index ${v.address_index})`,
          `created   ${v.created_at}   expires ${v.expires_at}${closed.length ? `   ${closed.join('   ')}` : ''}`,
          metadata ? `metadata  ${metadata}` : null,
          v.callback_url ? `callback  ${v.callback_url}` : null,
          `checkout  ${v.checkout_url}`,
          'payments',
          v.payments.length === 0 ? '  (none)' : null,
          ...v.payments.map((p) =>
            `  ${p.txid}:${p.vout}  ${sats(p.amount_sats)}  ${p.status}${p.block_height !== null ? `, ${plural(p.confirmations, 'confirmation')}, block ${p.block_height}` : ''}${p.coinbase ? ', coinbase' : ''}  first seen ${p.first_seen_at}`),
          'events',
          v.events.length === 0 ? '  (none)' : null,
          ...v.events.flatMap((e) => [
            `  ${e.created_at}  ${e.type}  ${e.id}`,
            ...e.deliveries.map((d) => `    ${d.id}  ${d.status}  ${plural(d.total_attempts, 'try', 'tries')}  ${lastAnswerOf(d)}  ${d.url}`),
          ]),
        ].filter((line) => line !== null).join('\n');
      });
    });

  cmd.command('find').description('invoices newest first: those paid by a transaction, of an address, with a metadata value, or of a store (what is given must all match)')
    .addOption(new Option('--txid <txid>', 'a transaction that paid them').argParser(parseTxid))
    .addOption(new Option('--address <address>', 'their payment address (reads every invoice of the store, or of all stores)').argParser(parseAddress))
    .addOption(new Option('--metadata <key=value>', 'a metadata entry, as the shop set it; a part with a space, =, a quote or a backslash JSON-quoted, as invoices show prints it (reads every invoice of the store, or of all stores)').argParser(parseMetadataPair))
    .option('--store <id>', 'only this store')
    .addOption(new Option('--limit <n>', 'at most this many (1-10000)').default(50).argParser(parseIntegerOption('--limit', 1, 10_000)))
    .action(function (this: Command) {
      const o = this.opts();
      if (o.txid === undefined && o.address === undefined && o.metadata === undefined && o.store === undefined) this.error('give --txid, --address, --metadata or --store');
      const found = withContext(this, (ctx) =>
        findInvoices(ctx, { txid: o.txid, address: o.address, metadata: o.metadata, storeId: o.store, limit: o.limit }).map((inv) => invoiceRecord(inv, ctx.baseUrl)));
      emit(this.optsWithGlobals(), found, () =>
        table(found.map((v) => [v.id, v.status, v.livemode ? 'live' : 'test', sats(v.amount_sats), `received ${v.amount_received_sats.toLocaleString('en-US')}`, v.created_at, v.store_id])));
    });
  return cmd;
}
