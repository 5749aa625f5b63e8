import { existsSync } from 'node:fs';
import { Command } from 'commander';
import { databasePath, prepareDataDir } from '../../src/db/connection.ts';
import { createApp } from '../../src/http/app.ts';
import { createRequestLog } from '../../src/http/middleware/request-context.ts';
import { listen } from '../../src/http/server.ts';
import { createRuntime } from '../../src/runtime.ts';
import { seedDemo, writeDemoSettings } from '../../src/services/demo.ts';
import { keysToSkipAfterRestore } from '../../src/services/restored-backup.ts';
import { configFrom } from '../context.ts';
import { fail, TILL_COMMAND, warn } from '../output.ts';

/** How long requests under way at SIGTERM/SIGINT/SIGHUP may take to finish before their connections are cut. */
const SHUTDOWN_GRACE_MS = 5_000;

export function serveCommand(): Command {
  return new Command('serve')
    .description('run Till: the HTTP API, checkout and background workers')
    .option('--demo', 'embedded default for trying Till: regtest, fixed USD rate, and on first start a test store with an API key, its settings written to till.toml')
    .action(async function (this: Command) {
      // Taken before anything starts: a SIGTERM during the start (a supervisor, a test that saw
      // "Till listening") waits for it, then stops cleanly, instead of ending Till by the default action.
      let shutdown: (() => Promise<void>) | null = null;
      let stopAsked = false;
      const onSignal = () => (shutdown ? void shutdown() : (stopAsked = true));
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      // A closed terminal or ssh session: Till has nothing to reload, so it stops the same clean way rather than dying mid-request.
      process.on('SIGHUP', onSignal);
      const config = configFrom(this, { demo: this.opts().demo });
      // A new demo data dir gets its settings before its database: a start that cannot bind leaves a data dir that
      // every command reads as the demo's (regtest), not as a mainnet till's holding regtest data.
      let demoSettings = this.opts().demo && !existsSync(databasePath(config.dataDir)) ? (prepareDataDir(config.dataDir), writeDemoSettings(config)) : null;
      const rt = createRuntime(config, {
        onFatal: (message) => {
          process.stderr.write(`till: ${message}\n`);
          process.exit(1);
        },
      });
      // First: a second server on this data dir stops here, before binding anything.
      rt.start();
      let server: Awaited<ReturnType<typeof listen>>;
      try {
        server = await listen(createApp(rt), config.host, config.port, { log: createRequestLog(rt.logger) });
      } catch (err) {
        // The lease goes with it: a retry on another port must not find "another till serve" running.
        await rt.stop();
        fail(`cannot listen on ${config.host}:${config.port}: ${(err as Error).message}; choose another port with --port or TILL_PORT`);
      }
      // Only once bound: the demo's API key is shown once, so it is made when it can be shown.
      const demo = this.opts().demo ? seedDemo(rt.ctx) : null;
      if (demo) demoSettings ??= writeDemoSettings(config);
      // With port 0 or no public URL, links point at the address actually bound.
      if (!config.publicUrl) rt.ctx.baseUrl = server.url;
      rt.logger.info({ url: server.url, network: config.network, data_dir: config.dataDir }, 'till listening');
      process.stdout.write(`Till listening on ${server.url} (network ${config.network}, data in ${config.dataDir})\n`);
      if (!config.publicUrl && !this.opts().demo) {
        warn(
          `public_url is not set: the checkout_url of invoices (in answers and webhooks) is ${server.url}/checkout/…, which buyers cannot open from their phones; ` +
            'set public_url (or TILL_PUBLIC_URL) to the address they reach Till at, behind your reverse proxy (docs/CONFIG.md, docs/CHECKOUT.md)',
        );
      }
      const restored = keysToSkipAfterRestore(rt.ctx);
      if (restored) {
        const skips = restored.xpubIds.map((id) => `${TILL_COMMAND} xpub skip ${id} <count>`).join(', ');
        warn(
          `this database is a backup taken at ${restored.takenAt}: the addresses of invoices made after that are handed out again, ` +
            `and a payment still coming to one would count for a new invoice. Skip past them, with a count above the invoices made since: ${skips} (docs/CONFIG.md, "Backups")`,
        );
      }
      if (demo) {
        process.stdout.write(
          `\nDemo store ${demo.storeId} created (test mode). Its API key, shown once:\n\n  ${demo.apiKey}\n\n` +
            `The secret that signs deliveries to invoices' callback_url (docs/WEBHOOKS.md), shown once:\n\n  ${demo.callbackSecret}\n\n` +
            `Try: curl -s ${server.url}/v1/invoices -H "Authorization: Bearer ${demo.apiKey}" -H "Content-Type: application/json" -d '{"amount_sats": 10000}'\n` +
            (demoSettings ? `\nThe demo's settings are in ${demoSettings}: CLI commands on this data directory use them (${TILL_COMMAND} --help).\n` : ''),
        );
      } else if (this.opts().demo) {
        // A restart: the key was shown once, at the first start.
        process.stdout.write(`The demo's API key was shown at its first start; another: ${TILL_COMMAND} keys mint --store <id> --env test (ids: ${TILL_COMMAND} store list)\n`);
      }
      let stopping = false;
      shutdown = async () => {
        // Another signal during the grace changes nothing: the requests under way still get their answers.
        if (stopping) return;
        stopping = true;
        rt.logger.info('stopping: streams end, requests under way get their answers');
        try {
          // Checkout streams end first (pages reconnect to the restarted till); requests under way get time to finish.
          rt.beginStop();
          await server.close({ graceMs: SHUTDOWN_GRACE_MS });
          await rt.stop();
        } catch (err) {
          fail(`stopping failed: ${(err as Error).message}`);
        }
        process.exit(0);
      };
      if (stopAsked) await shutdown();
    });
}
