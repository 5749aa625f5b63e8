import { Command, Option } from 'commander';
import { deliveryView } from '../../src/domain/webhook-views.ts';
import { toIso } from '../../src/clock.ts';
import { pruneWebhookHistory } from '../../src/services/prune.ts';
import { DELIVERY_STATUSES, getDelivery, listDeliveries, replayAllDead, replayDelivery } from '../../src/services/webhooks.ts';
import { withContext } from '../context.ts';
import { emit, mandatory, parseIntegerOption, plural, table } from '../output.ts';

/** What a listing says of a delivery's last attempt: a success its code (an error beside it, the answer's body cut short, did not keep the receiver from it), else its error or code. */
export function lastAnswerOf(d: ReturnType<typeof deliveryView>): string {
  return String((d.status === 'success' ? d.last_status_code : d.last_error ?? d.last_status_code) ?? '-');
}

export function deliveriesCommand(): Command {
  const cmd = new Command('deliveries').description('inspect, replay and prune webhook deliveries (works on the database; a running till sends replays within a second)');

  cmd.command('list').description('list deliveries, newest first')
    .addOption(new Option('--status <status>', 'only this status').choices(DELIVERY_STATUSES))
    .option('--store <id>', 'only this store')
    .addOption(new Option('--limit <n>', 'at most this many (1-10000)').default(50).argParser(parseIntegerOption('--limit', 1, 10_000)))
    .action(function (this: Command) {
      const o = this.opts();
      const { ds, kinds } = withContext(this, (ctx) => {
        const list = listDeliveries(ctx, { status: o.status, storeId: o.store, limit: o.limit });
        return { ds: list.map((d) => deliveryView(d)), kinds: ctx.repos.events.kindsOf(list.map((d) => d.eventId)) };
      });
      // The text names each delivery's event and invoice, to tell them apart; the JSON has event_id for that.
      emit(this.optsWithGlobals(), ds, () => table(ds.map((d) => [
        d.id, d.status, plural(d.total_attempts, 'try', 'tries'), lastAnswerOf(d),
        kinds.get(d.event_id)?.type ?? '-', kinds.get(d.event_id)?.invoiceId ?? '-', d.url,
      ])));
    });

  cmd.command('show').description('one delivery with every attempt, status code and response body').argument('<id>', 'delivery id (dlv_…)')
    .action(function (this: Command, id: string) {
      const d = withContext(this, (ctx) => deliveryView(getDelivery(ctx, id), ctx.repos.webhookDeliveries.attempts(id)));
      emit(this.optsWithGlobals(), d, () =>
        [
          `${d.id}  ${d.status}  event ${d.event_id}  → ${d.url}`,
          d.next_attempt_at ? `next attempt at ${d.next_attempt_at}` : null,
          // Set aside without an attempt (endpoint disabled or deleted): the attempts below do not say why.
          d.last_error && d.status !== 'success' ? `last error: ${d.last_error}` : null,
          // Both when both: a status line that came, then a body that did not in time ("200 timeout after 10000 ms").
          ...(d.attempt_log ?? []).map((a) => `  #${a.n} ${a.started_at}  ${[a.status_code, a.error].filter((x) => x !== null).join(' ')}  ${a.duration_ms} ms  ${(a.response_body ?? '').slice(0, 120).replace(/\s+/g, ' ')}`),
        ].filter(Boolean).join('\n'));
    });

  cmd.command('replay').description('a fresh cycle of 7 attempts with the same event and body')
    .argument('[id]', 'delivery id (dlv_…)')
    .option('--all-dead', 'every dead_letter delivery but those of a disabled endpoint (enable it first) or a deleted one')
    .option('--store <id>', 'with --all-dead: only this store')
    .action(function (this: Command, id: string | undefined) {
      const o = this.opts();
      if (id && o.allDead) this.error('give a delivery id or --all-dead, not both');
      if (!id && !o.allDead) this.error('give a delivery id or --all-dead');
      if (id && o.store) this.error('--store goes with --all-dead; a delivery id names its delivery');
      const { replayed, left } = withContext(this, (ctx) => (id ? { replayed: [replayDelivery(ctx, id)], left: 0 } : replayAllDead(ctx, o.store)));
      const ds = replayed.map((d) => deliveryView(d));
      emit(this.optsWithGlobals(), { replayed: ds, left_dead_letters: left }, () =>
        `replaying ${plural(ds.length, 'delivery', 'deliveries')}` +
          (left ? `; ${plural(left, 'dead letter', 'dead letters')} of a disabled or deleted endpoint left as ${left === 1 ? 'it is' : 'they are'} (a disabled endpoint's: enable it, then replay; a deleted one's cannot be replayed)` : ''));
    });
  cmd.command('prune').description('delete delivered webhook history older than some days: events whose every delivery succeeded, those deliveries and their attempts (invoices, payments and deliveries not delivered are kept)')
    .addOption(mandatory(new Option('--older-than <days>', 'what is older than this many days goes (1-36500)').argParser(parseIntegerOption('--older-than', 1, 36_500))))
    .option('--dry-run', 'count what would go, delete nothing')
    .action(async function (this: Command) {
      const o = this.opts();
      const r = await withContext(this, (ctx) => pruneWebhookHistory(ctx, o.olderThan, { dryRun: Boolean(o.dryRun) }));
      const view = { before: toIso(r.before), dry_run: Boolean(o.dryRun), events: r.events, deliveries: r.deliveries, attempts: r.attempts, kept_events: r.keptEvents };
      emit(this.optsWithGlobals(), view, () =>
        `${o.dryRun ? 'would delete' : 'deleted'} ${plural(r.events, 'event')}, ${plural(r.deliveries, 'delivery', 'deliveries')} and ${plural(r.attempts, 'attempt')} from before ${view.before}` +
          (r.keptEvents ? `; kept ${plural(r.keptEvents, 'older event')} with a delivery not delivered, or delivered since` : ''));
    });
  return cmd;
}
