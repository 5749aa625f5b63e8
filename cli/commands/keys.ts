import { Command, Option } from 'commander';
import { apiKeyView } from '../../src/domain/credential-views.ts';
import { STORE_MODES } from '../../src/domain/store.ts';
import { listApiKeys, mintApiKey, revokeApiKey } from '../../src/services/api-keys.ts';
import { getStore } from '../../src/services/stores.ts';
import { withContext } from '../context.ts';
import { emit, mandatory, table, warn } from '../output.ts';

export function keysCommand(): Command {
  const cmd = new Command('keys').description('mint, list and revoke API keys');

  cmd.command('mint').description('mint an API key; it is printed once and stored only as a hash')
    .addOption(mandatory(new Option('--store <id>', 'store id')))
    .addOption(mandatory(new Option('--env <env>', 'live or test: must match the store mode to be usable').choices(STORE_MODES)))
    .action(function (this: Command) {
      const o = this.opts();
      const { record, key, mode } = withContext(this, (ctx) => ({ ...mintApiKey(ctx, o.store, o.env), mode: getStore(ctx, o.store).mode }));
      emit(this.optsWithGlobals(), { ...apiKeyView(record), key }, () => `${key}\n(key ${record.id}: shown once, store it now; Till keeps only its hash)`);
      // Allowed ahead of a change of mode, but unusable until then: say so now (with --json too), not at the first 401.
      if (mode !== o.env) warn(`the store is in ${mode} mode: this ${o.env} key answers 401 api_key_wrong_env until till store set ${o.store} --mode ${o.env}`);
    });

  cmd.command('list').description('list API keys (masked)').option('--store <id>', 'only this store').action(function (this: Command) {
    const keys = withContext(this, (ctx) => listApiKeys(ctx, this.opts().store)).map(apiKeyView);
    emit(this.optsWithGlobals(), keys, () => table(keys.map((k) => [k.id, k.store_id, k.masked, k.revoked_at ? `revoked ${k.revoked_at}` : 'active'])));
  });

  cmd.command('revoke').description('revoke an API key at once (401 api_key_revoked)').argument('<key_id>', 'key id (key_…)').action(function (this: Command, id: string) {
    const { record, already } = withContext(this, (ctx) => ({ already: ctx.repos.apiKeys.get(id)?.revokedAt != null, record: revokeApiKey(ctx, id) }));
    const key = apiKeyView(record);
    emit(this.optsWithGlobals(), key, () => `${already ? 'already revoked' : 'revoked'} ${key.id} (${key.masked})${already ? ` at ${key.revoked_at}` : ''}`);
  });
  return cmd;
}
