import { Command, Option } from 'commander';
import { STORE_LIMITS, STORE_MODES, type StoreSettings } from '../../src/domain/store.ts';
import { storeView } from '../../src/domain/store-view.ts';
import { archiveStore, createStore, getStore, listStores, updateStore } from '../../src/services/stores.ts';
import { withContext } from '../context.ts';
import { emit, mandatory, parseIntegerOption, table } from '../output.ts';

function settingsOptions(cmd: Command): Command {
  const { confirmations, expiryMinutes, lateWindowMinutes } = STORE_LIMITS;
  return cmd
    .addOption(new Option('--confirmations <n>', `confirmations an invoice needs (${confirmations.min}-${confirmations.max}, default 1)`).argParser(parseIntegerOption('--confirmations', confirmations.min, confirmations.max)))
    .addOption(new Option('--expiry-minutes <n>', `default invoice lifetime (${expiryMinutes.min}-${expiryMinutes.max}, default 30)`).argParser(parseIntegerOption('--expiry-minutes', expiryMinutes.min, expiryMinutes.max)))
    .addOption(new Option('--late-window-minutes <n>', `how long after expiry a payment can still complete an invoice (${lateWindowMinutes.min}-${lateWindowMinutes.max}, default 10080 = 7 days)`).argParser(parseIntegerOption('--late-window-minutes', lateWindowMinutes.min, lateWindowMinutes.max)))
    .option('--logo-url <url>', "logo shown on the checkout page ('' removes it)")
    .option('--brand-color <#rrggbb>', "accent colour of the checkout page ('' removes it)");
}

function settingsFrom(o: Record<string, unknown>): StoreSettings {
  return {
    name: o.name as string | undefined,
    mode: o.mode as StoreSettings['mode'],
    confirmationsRequired: o.confirmations as number | undefined,
    expiryMinutes: o.expiryMinutes as number | undefined,
    lateWindowMinutes: o.lateWindowMinutes as number | undefined,
    // An empty value removes the setting: the page goes back to Till's own look.
    logoUrl: o.logoUrl === '' ? null : (o.logoUrl as string | undefined),
    brandColor: o.brandColor === '' ? null : (o.brandColor as string | undefined),
  };
}

function describe(s: ReturnType<typeof storeView>): string {
  return [
    `${s.id}  ${s.name}`,
    `  mode: ${s.mode}   confirmations: ${s.confirmations_required}   expiry: ${s.expiry_minutes} min   late window: ${s.late_window_minutes} min`,
    s.logo_url || s.brand_color ? `  logo: ${s.logo_url ?? '-'}   colour: ${s.brand_color ?? '-'}` : null,
    s.archived_at ? `  archived at ${s.archived_at}` : null,
  ].filter(Boolean).join('\n');
}

export function storeCommand(): Command {
  const cmd = new Command('store').description('create and manage stores');

  settingsOptions(
    cmd.command('create').description('create a store')
      .addOption(mandatory(new Option('--name <name>', 'store name shown to buyers')))
      .addOption(mandatory(new Option('--mode <mode>', 'live (real payments) or test (simulated)').choices(STORE_MODES))),
  ).action(function (this: Command) {
    const o = this.opts();
    const { store, callbackSecret } = withContext(this, (ctx) => createStore(ctx, { ...settingsFrom(o), name: o.name, mode: o.mode }), { create: true });
    emit(this.optsWithGlobals(), { ...storeView(store), callback_secret: callbackSecret }, () =>
      [
        `created ${describe(storeView(store))}`,
        `callback secret (signs webhooks to invoices' callback_url; shown once, store it now): ${callbackSecret}`,
        `next: till xpub add --store ${store.id} --env ${store.mode} <your wallet's xpub>, then till keys mint --store ${store.id} --env ${store.mode}`,
      ].join('\n'));
  });

  cmd.command('list').description('list stores').action(function (this: Command) {
    const stores = withContext(this, listStores).map(storeView);
    emit(this.optsWithGlobals(), stores, () => table(stores.map((s) => [s.id, s.mode, s.archived_at ? 'archived' : 'active', s.name])));
  });

  cmd.command('show').description('show one store').argument('<id>', 'store id').action(function (this: Command, id: string) {
    const store = storeView(withContext(this, (ctx) => getStore(ctx, id)));
    emit(this.optsWithGlobals(), store, () => describe(store));
  });

  cmd.command('archive').description('archive a store: its API keys stop working (404 not_found) and it takes no new keys or xpubs; its invoices are still watched and their events delivered (its webhooks are managed as before)').argument('<id>', 'store id').action(function (this: Command, id: string) {
    const store = storeView(withContext(this, (ctx) => archiveStore(ctx, id)));
    emit(this.optsWithGlobals(), store, () => `archived ${store.id}`);
  });

  settingsOptions(
    cmd.command('set').description('change store settings').argument('<id>', 'store id')
      .option('--name <name>', 'store name')
      .addOption(new Option('--mode <mode>', 'live or test: its API keys of the other mode then answer 401 api_key_wrong_env, and its invoices made in that mode are reached through till invoices only').choices(STORE_MODES)),
  ).action(function (this: Command, id: string) {
    const o = this.opts();
    // "updated" for a command that changed nothing would hide a forgotten or misspelt option.
    if (Object.keys(o).length === 0) this.error(`give a setting to change (${this.options.map((opt) => opt.long).join(', ')})`);
    const store = storeView(withContext(this, (ctx) => updateStore(ctx, id, settingsFrom(o))));
    emit(this.optsWithGlobals(), store, () => `updated ${describe(store)}`);
  });
  return cmd;
}
