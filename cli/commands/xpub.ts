import { Command, Option } from 'commander';
import { xpubView } from '../../src/domain/credential-views.ts';
import { STORE_MODES } from '../../src/domain/store.ts';
import { addXpub, GAP_LIMIT, listXpubs, retireXpub, SKIP_MAX, skipIndexes } from '../../src/services/xpubs.ts';
import { withContext } from '../context.ts';
import { emit, mandatory, parseIntegerOption, table } from '../output.ts';

/** How close a key is to its wallet's gap limit; the rule holds back live invoices only. */
function gapText(x: ReturnType<typeof xpubView>): string {
  if (x.env === 'test') return `gap limit ${x.gap_limit} (test: not enforced)`;
  return x.gap_headroom > 0 ? `gap ${x.gap_headroom} of ${x.gap_limit} left` : `at gap limit ${x.gap_limit}`;
}

export function xpubCommand(): Command {
  const cmd = new Command('xpub').description('import and manage watch-only keys (Till never holds a private key)');

  cmd.command('add').description('make a key the store\'s active one for an environment (retires the previous one)')
    .argument('<key>', 'xpub/ypub/zpub, tpub/upub/vpub, or a descriptor: wpkh(…), sh(wpkh(…)), tr(…), pkh(…)')
    .addOption(mandatory(new Option('--store <id>', 'store id')))
    .addOption(mandatory(new Option('--env <env>', 'live (key must be of the configured network) or test').choices(STORE_MODES)))
    .addOption(new Option('--gap-limit <n>', `your wallet's gap limit (${GAP_LIMIT.min}-${GAP_LIMIT.max}, default ${GAP_LIMIT.default})`).argParser(parseIntegerOption('--gap-limit', GAP_LIMIT.min, GAP_LIMIT.max)))
    .action(function (this: Command, key: string) {
      const o = this.opts();
      const r = withContext(this, (ctx) => addXpub(ctx, { storeId: o.store, env: o.env, key, gapLimit: o.gapLimit }));
      const out = { xpub: xpubView(r.xpub), retired: r.retired && xpubView(r.retired), already_active: r.alreadyActive, first_addresses: r.firstAddresses };
      emit(this.optsWithGlobals(), out, () =>
        [
          // The same key again (a rerun setup script, say): "added" would read as a second key.
          r.alreadyActive
            ? `${r.xpub.id} (${r.xpub.scriptType}) is already the active ${r.xpub.env} key of ${r.xpub.storeId} (gap limit ${r.xpub.gapLimit})`
            : `added ${r.xpub.id} (${r.xpub.scriptType}) as the active ${r.xpub.env} key of ${r.xpub.storeId}`,
          r.retired ? `retired ${r.retired.id}; its issued addresses stay watched` : null,
          'first receive addresses, compare them with your wallet:',
          ...r.firstAddresses.map((a, i) => `  0/${i}  ${a}`),
        ].filter(Boolean).join('\n'));
    });

  cmd.command('list').description('list keys').option('--store <id>', 'only this store').action(function (this: Command) {
    const xs = withContext(this, (ctx) => listXpubs(ctx, this.opts().store)).map(xpubView);
    emit(this.optsWithGlobals(), xs, () => table(xs.map((x) => [x.id, x.store_id, x.env, x.status, x.script_type, `next ${x.next_index}`, gapText(x), `${x.key.slice(0, 24)}…`])));
  });

  cmd.command('skip').description('hand out no invoice the next <count> receive addresses (after restoring a backup older than the last invoice: their addresses may be paid)')
    .argument('<id>', 'xpub id (xpb_…)')
    .argument('<count>', `how many indexes to skip (1-${SKIP_MAX})`, parseIntegerOption('<count>', 1, SKIP_MAX))
    .action(function (this: Command, id: string, count: number) {
      const x = xpubView(withContext(this, (ctx) => skipIndexes(ctx, id, count)));
      emit(this.optsWithGlobals(), x, () => `${x.id}: next receive index ${x.next_index}`);
    });

  cmd.command('retire').description('stop using a key for new invoices').argument('<id>', 'xpub id (xpb_…)').action(function (this: Command, id: string) {
    const x = xpubView(withContext(this, (ctx) => retireXpub(ctx, id)));
    emit(this.optsWithGlobals(), x, () => `retired ${x.id}`);
  });
  return cmd;
}
