import { Command } from 'commander';
import { existsSync } from 'node:fs';
import { describeConfig } from '../../src/config.ts';
import { configFrom } from '../context.ts';
import { emit, table, warn } from '../output.ts';

export function configCommand(): Command {
  const cmd = new Command('config').description('inspect the effective configuration');
  cmd.command('show').description('print the effective settings (secrets masked)').action(function (this: Command) {
    const config = configFrom(this);
    const shown = describeConfig(config);
    // Likely a mistyped --data-dir or TILL_DATA_DIR: what is shown then comes from no settings file of a till.
    if (!existsSync(config.dataDir)) warn(`${config.dataDir} does not exist (yet): no till's settings file was read there; check --data-dir or TILL_DATA_DIR`);
    emit(this.optsWithGlobals(), shown, () => table(Object.entries(shown).map(([k, v]) => [k, String(v)])));
  });
  return cmd;
}
