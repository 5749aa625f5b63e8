import { Command } from 'commander';
import { describeConfig } from '../../src/config.ts';
import { configFrom } from '../context.ts';
import { emit, table } from '../output.ts';

export function configCommand(): Command {
  const cmd = new Command('config').description('inspect the effective configuration');
  cmd.command('show').description('print the effective settings (secrets masked)').action(function (this: Command) {
    const shown = describeConfig(configFrom(this));
    emit(this.optsWithGlobals(), shown, () => table(Object.entries(shown).map(([k, v]) => [k, String(v)])));
  });
  return cmd;
}
