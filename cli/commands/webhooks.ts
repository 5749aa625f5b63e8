import { Command, Option } from 'commander';
import { toIsoOrNull } from '../../src/clock.ts';
import { endpointView } from '../../src/domain/webhook-views.ts';
import { createEndpoint, deleteEndpoint, listEndpoints, rotateCallbackSecret, rotateEndpointSecret, rotateUnreadableSecrets, updateEndpoint } from '../../src/services/webhooks.ts';
import { withContext } from '../context.ts';
import { emit, mandatory, table } from '../output.ts';

export function webhooksCommand(): Command {
  const cmd = new Command('webhooks').description("manage a store's webhook endpoints and secrets");

  cmd.command('list').description('list endpoints').addOption(mandatory(new Option('--store <id>', 'store id'))).action(function (this: Command) {
    const eps = withContext(this, (ctx) => listEndpoints(ctx, this.opts().store)).map(endpointView);
    emit(this.optsWithGlobals(), eps, () => table(eps.map((e) => [e.id, e.status, e.enabled_events.join(','), e.url])));
  });

  cmd.command('add').description('add an endpoint; its signing secret is printed once')
    .addOption(mandatory(new Option('--store <id>', 'store id')))
    .addOption(mandatory(new Option('--url <url>', 'where to POST events')))
    .option('--events <types>', 'comma-separated event types, or * for all', '*')
    .option('--description <text>', 'a note for yourself')
    .action(function (this: Command) {
      const o = this.opts();
      const { endpoint, secret } = withContext(this, (ctx) =>
        createEndpoint(ctx, o.store, { url: o.url, description: o.description, enabled_events: String(o.events).split(',').map((s) => s.trim()) }));
      emit(this.optsWithGlobals(), { ...endpointView(endpoint), secret }, () => `added ${endpoint.id} → ${endpoint.url}\nsigning secret (shown once): ${secret}`);
    });

  cmd.command('rotate').description('new signing secret; the previous one stays valid for 24 h. --unreadable: a new one for every secret secret.key cannot open (a data dir restored without its key), making the key if it is missing')
    .option('--store <id>', 'store id (with --endpoint or --callback)')
    .option('--endpoint <id>', 'the endpoint (we_…) whose secret to rotate')
    .option('--callback', "rotate the store's callback secret (for invoices' callback_url) instead")
    .option('--unreadable', 'every store: replace the secrets this secret.key cannot open; no previous one stays valid')
    .action(function (this: Command) {
      const o = this.opts();
      if (o.unreadable) {
        if (o.store || o.endpoint || o.callback) this.error('--unreadable covers every store: give it alone');
        rotateUnreadable(this);
        return;
      }
      if (!o.store) this.error('give --store <id> with --endpoint <id> or --callback (or --unreadable alone)');
      if (Boolean(o.endpoint) === Boolean(o.callback)) this.error('give either --endpoint <id> or --callback');
      const r = withContext(this, (ctx) => {
        if (o.callback) return rotateCallbackSecret(ctx, o.store);
        const { endpoint, secret } = rotateEndpointSecret(ctx, o.store, o.endpoint);
        return { secret, previousExpiresAt: endpoint.secrets.previousExpiresAt };
      });
      const until = toIsoOrNull(r.previousExpiresAt);
      emit(this.optsWithGlobals(), { secret: r.secret, previous_secret_expires_at: until }, () => `new secret (shown once): ${r.secret}\n` + (until
        ? `the previous secret stays valid until ${until} (24 hours)`
        : 'no previous secret stays valid (there was none, or this secret.key could not open it): give the new one to the receiving server now'));
    });

  for (const [name, enabled] of [['disable', false], ['enable', true]] as const) {
    cmd.command(name).description(name === 'disable' ? 'disable an endpoint: nothing more is sent; its waiting deliveries go to dead_letter, to replay once enabled' : 'enable an endpoint again').addOption(mandatory(new Option('--store <id>', 'store id'))).argument('<endpoint>', 'endpoint id (we_…)')
      .action(function (this: Command, id: string) {
        const e = endpointView(withContext(this, (ctx) => updateEndpoint(ctx, this.opts().store, id, { enabled })));
        emit(this.optsWithGlobals(), e, () => `${e.id} is ${e.status}`);
      });
  }

  cmd.command('delete').description('delete an endpoint: its waiting deliveries go to dead_letter, never replayable').addOption(mandatory(new Option('--store <id>', 'store id'))).argument('<endpoint>', 'endpoint id (we_…)')
    .action(function (this: Command, id: string) {
      const e = endpointView(withContext(this, (ctx) => deleteEndpoint(ctx, this.opts().store, id)));
      emit(this.optsWithGlobals(), { ...e, deleted: true }, () => `deleted ${e.id}`);
    });
  return cmd;
}

/** The way out of a lost secret.key: a new key if it is missing, and a new secret for each one it cannot open. */
function rotateUnreadable(cmd: Command): void {
  const { madeKey, rotated } = withContext(cmd, (ctx) => {
    const madeKey = ctx.secrets.load();
    return { madeKey, rotated: rotateUnreadableSecrets(ctx) };
  }, { replaceLostSecretKey: true });
  const json = { made_key: madeKey, rotated: rotated.map((r) => ({ store_id: r.storeId, endpoint_id: r.endpointId, url: r.url, secret: r.secret })) };
  emit(cmd.optsWithGlobals(), json, () => [
    ...(madeKey ? ['secret.key was missing: made a new one'] : []),
    ...(rotated.length === 0
      ? ['every secret in use opens with this secret.key: nothing to replace']
      : [
          'new secrets (shown once; none before them stays valid): give each to the server that receives with it',
          table(rotated.map((r) => [r.storeId, r.endpointId ?? 'callback', r.url ?? "(invoices' callback_url)", r.secret])),
        ]),
  ].join('\n'));
}
