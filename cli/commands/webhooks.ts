import { Command } from 'commander';
import { endpointView } from '../../src/domain/webhook-views.ts';
import { createEndpoint, deleteEndpoint, listEndpoints, rotateCallbackSecret, rotateEndpointSecret, updateEndpoint } from '../../src/services/webhooks.ts';
import { withContext } from '../context.ts';
import { emit, table } from '../output.ts';

export function webhooksCommand(): Command {
  const cmd = new Command('webhooks').description("manage a store's webhook endpoints and secrets");

  cmd.command('list').description('list endpoints').requiredOption('--store <id>', 'store id').action(function (this: Command) {
    const eps = withContext(this, (ctx) => listEndpoints(ctx, this.opts().store)).map(endpointView);
    emit(this.optsWithGlobals(), eps, () => table(eps.map((e) => [e.id, e.status, e.enabled_events.join(','), e.url])));
  });

  cmd.command('add').description('add an endpoint; its signing secret is printed once')
    .requiredOption('--store <id>', 'store id')
    .requiredOption('--url <url>', 'where to POST events')
    .option('--events <types>', 'comma-separated event types, or * for all', '*')
    .option('--description <text>', 'a note for yourself')
    .action(function (this: Command) {
      const o = this.opts();
      const { endpoint, secret } = withContext(this, (ctx) =>
        createEndpoint(ctx, o.store, { url: o.url, description: o.description, enabled_events: String(o.events).split(',').map((s) => s.trim()) }));
      emit(this.optsWithGlobals(), { ...endpointView(endpoint), secret }, () => `added ${endpoint.id} → ${endpoint.url}\nsigning secret (shown once): ${secret}`);
    });

  cmd.command('rotate').description('new signing secret; the previous one stays valid for 24 h')
    .requiredOption('--store <id>', 'store id')
    .option('--endpoint <id>', 'the endpoint (we_…) whose secret to rotate')
    .option('--callback', "rotate the store's callback secret (for invoices' callback_url) instead")
    .action(function (this: Command) {
      const o = this.opts();
      if (Boolean(o.endpoint) === Boolean(o.callback)) this.error('give either --endpoint <id> or --callback');
      const r = withContext(this, (ctx) => (o.callback ? rotateCallbackSecret(ctx, o.store) : rotateEndpointSecret(ctx, o.store, o.endpoint)));
      emit(this.optsWithGlobals(), { secret: r.secret }, () => `new secret (shown once): ${r.secret}\nthe previous secret stays valid for 24 hours`);
    });

  for (const [name, enabled] of [['disable', false], ['enable', true]] as const) {
    cmd.command(name).description(name === 'disable' ? 'disable an endpoint: nothing more is sent; its waiting deliveries go to dead_letter, to replay once enabled' : 'enable an endpoint again').requiredOption('--store <id>', 'store id').argument('<endpoint>', 'endpoint id (we_…)')
      .action(function (this: Command, id: string) {
        const e = endpointView(withContext(this, (ctx) => updateEndpoint(ctx, this.opts().store, id, { enabled })));
        emit(this.optsWithGlobals(), e, () => `${e.id} is ${e.status}`);
      });
  }

  cmd.command('delete').description('delete an endpoint: its waiting deliveries go to dead_letter, never replayable').requiredOption('--store <id>', 'store id').argument('<endpoint>', 'endpoint id (we_…)')
    .action(function (this: Command, id: string) {
      const e = endpointView(withContext(this, (ctx) => deleteEndpoint(ctx, this.opts().store, id)));
      emit(this.optsWithGlobals(), { ...e, deleted: true }, () => `deleted ${e.id}`);
    });
  return cmd;
}
