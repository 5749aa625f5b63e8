import { Command, Help, Option } from 'commander';
import { SETTINGS } from '../src/config.ts';
import { VERSION } from '../src/version.ts';
import { checkMandatoryOptions, escapeControls, isMandatory, redactPrivateKeys, TILL_COMMAND } from './output.ts';
import { backupCommand } from './commands/backup.ts';
import { configCommand } from './commands/config.ts';
import { deliveriesCommand } from './commands/deliveries.ts';
import { invoicesCommand } from './commands/invoices.ts';
import { initCommand } from './commands/init.ts';
import { webhooksCommand } from './commands/webhooks.ts';
import { keysCommand } from './commands/keys.ts';
import { serveCommand } from './commands/serve.ts';
import { storeCommand } from './commands/store.ts';
import { xpubCommand } from './commands/xpub.ts';

/** Under every command's help: the global options listed are the common few. */
const HIDDEN_SETTINGS = [
  '',
  'Every setting has a flag, each taking a value; most are not listed above',
  '(--rpc-url, --rpc-cookie-file, --bitcoind false, --allow-private-callbacks true, ...).',
  'docs/CONFIG.md lists them all; till config show prints the effective settings.',
].join('\n');

/**
 * A bad option or argument value said as the settings' own errors say it
 * ("--network must be one of main, test, signet, regtest (got "x")"): commander
 * words it "option '--mode <mode>' argument 'x' is invalid. Allowed choices are
 * live, test." for its choices, and puts that first sentence before the
 * message of a parser of Till's, which names the option again. Any other text
 * is left as it is.
 */
function plainUsageError(text: string): string {
  const bad = badValue(text);
  if (!bad) return text;
  const choices = /^Allowed choices are ([^]*)\.$/.exec(bad.why);
  const rule = choices ? `${bad.name} must be one of ${choices[1]}` : bad.why.startsWith(`${bad.name} `) ? bad.why : `${bad.name}: ${bad.why}`;
  return `${rule} (got ${JSON.stringify(bad.value)})`;
}

/** The parts of commander's error for a value its parser refused: the option (--mode) or argument (<count>), the value, and why. */
function badValue(text: string): { name: string; value: string; why: string } | null {
  const option = /^option '(--[^' ]+)[^']*' argument '([^]*)' is invalid\. ([^]*)$/.exec(text);
  if (option) return { name: option[1]!, value: option[2]!, why: option[3]! };
  const argument = /^command-argument value '([^]*)' is invalid for argument '([^']+)'\. ([^]*)$/.exec(text);
  if (argument) return { name: `<${argument[2]}>`, value: argument[1]!, why: argument[3]! };
  return null;
}

/** The helps commander formats to show as an error: only a group's, when it is given no command (showHelpAfterError is a hint, not the help). */
const helpAsError = new WeakSet<Help>();

/** How to ask for a command's help, as the user runs Till: "till deliveries replay --help". */
function helpCommandOf(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return [TILL_COMMAND, ...names, '--help'].join(' ');
}

export function buildProgram(): Command {
  const program = new Command('till')
    .description('Till: a self-hosted Bitcoin till. Admin commands work on the data directory, also while the server runs.')
    .version(VERSION)
    .option('--json', 'print machine-readable JSON')
    .configureHelp({ showGlobalOptions: true });
  // Every setting can be given as a flag; flags beat TILL_* env, which beats till.toml.
  for (const s of SETTINGS) {
    program.addOption(new Option(`--${s.flag} <value>`, `${s.description} [env ${s.env}]`).hideHelp(!['dataDir', 'network', 'host', 'port', 'publicUrl', 'rates', 'logLevel'].includes(s.key)));
  }
  // Mandatory options are checked once the command's options are read: a mistyped one is said first.
  program.hook('preAction', checkMandatoryOptions);
  program.addCommand(initCommand());
  program.addCommand(serveCommand());
  program.addCommand(storeCommand());
  program.addCommand(xpubCommand());
  program.addCommand(keysCommand());
  program.addCommand(webhooksCommand());
  program.addCommand(invoicesCommand());
  program.addCommand(deliveriesCommand());
  program.addCommand(backupCommand());
  program.addCommand(configCommand());
  // Commands built apart and added keep their own help and output settings: show
  // the global flags everywhere, and keep private keys out of every error.
  const showGlobals = (cmd: Command): void => {
    if (cmd.commands.length > 0) addHelpCommand(cmd);
    cmd.configureHelp({
      showGlobalOptions: true,
      optionDescription(this: Help, option: Option): string {
        const text = Help.prototype.optionDescription.call(this, option);
        return isMandatory(option) ? `${text} (required)` : text;
      },
      // Commander shows the whole help, as an error, to a group given no command ("till store"):
      // said as every usage error is instead, on one line with its commands and the hint.
      prepareContext(this: Help, context: { error?: boolean; helpWidth?: number }): void {
        Help.prototype.prepareContext.call(this, context);
        if (context.error) helpAsError.add(this);
      },
      formatHelp(this: Help, c: Command, helper: Help): string {
        if (!helpAsError.has(this)) return Help.prototype.formatHelp.call(this, c, helper);
        const names = helper.visibleCommands(c).map((sub) => sub.name()).filter((name) => name !== 'help');
        return `till: missing command (${new Intl.ListFormat('en', { type: 'disjunction' }).format(names)})\n(see ${helpCommandOf(c)})\n`;
      },
    });
    // Not under the one-line error that stands for the help (formatHelp above).
    cmd.addHelpText('after', ({ error }) => (error ? '' : HIDDEN_SETTINGS));
    cmd.configureOutput({
      // What was typed is echoed in usage errors: its control characters shown, not obeyed, as in every other error.
      writeErr: (text) => process.stderr.write(escapeControls(redactPrivateKeys(text))),
      // Usage errors (commander's, and this.error's in the commands) read as every other error: "till: …",
      // on one line (commander puts its "Did you mean" on a second).
      outputError: (text, write) => write(`till: ${plainUsageError(text.replace(/^error: /, '').trimEnd().replace(/\n\(Did you mean/, ' (did you mean'))}\n`),
    });
    // A usage error points at the help of the command it was in: the whole help after it buried the error.
    cmd.showHelpAfterError(`(see ${helpCommandOf(cmd)})`);
    cmd.commands.forEach(showGlobals);
  };
  showGlobals(program);
  return program;
}

/**
 * "help [command...]" as a command of its own, in place of commander's: that one
 * answered "help bogus" with the whole help and exit 1, never saying bogus was
 * unknown (and "help store bogus" with store's help, exit 0). This one walks the
 * names given; the first one unknown goes to its parent's parse, which says so
 * as "till bogus" does (with commander's did-you-mean), exit 1.
 */
function addHelpCommand(parent: Command): void {
  parent.command('help').description('display help for command').argument('[command...]', 'the command, and its subcommand, whose help to show')
    .action(async function (this: Command, names: string[]) {
      let cmd = parent;
      for (const name of names) {
        const sub = cmd.commands.find((c) => c.name() === name || c.aliases().includes(name));
        if (sub) {
          cmd = sub;
          continue;
        }
        // Exits with commander's unknown-command error.
        if (cmd.commands.length > 0) await cmd.parseAsync([name], { from: 'user' });
        cmd.error(`unknown command '${name}': ${cmd.name()} has no subcommands`);
      }
      cmd.help();
    });
}
