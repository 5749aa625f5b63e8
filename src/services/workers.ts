import type { Logger } from '../log.ts';

/** How long the same failure of a loop stays unlogged after it was logged: a minute's worth of runs. */
const QUIET_MS = 60_000;

/**
 * A background loop: runs `tick` every `intervalMs`, never overlapping itself,
 * logging (not throwing) failures. Work that must survive a restart keeps its
 * due times in the database; the loop only decides when to look. A failure
 * that repeats (the same message, run after run) is logged again only after a
 * minute's worth of runs, with how often it came meanwhile: a loop that runs
 * every 50 ms on a database that refuses writes would otherwise log twenty
 * lines a second.
 */
export function startLoop(name: string, intervalMs: number, logger: Logger, tick: () => Promise<unknown> | unknown): { stop(): Promise<void> } {
  let running: Promise<unknown> | null = null;
  let stopped = false;
  const quietRuns = Math.max(1, Math.ceil(QUIET_MS / intervalMs));
  /** The failure logged last, and the failed runs since (none logged) while it repeats. */
  let failing: { message: string; runs: number } | null = null;
  const fail = (err: unknown) => {
    const message = err instanceof Error ? err.message : String(err);
    if (failing?.message === message && failing.runs < quietRuns) {
      failing.runs++;
      return;
    }
    const repeated = failing?.message === message ? { repeated: failing.runs - 1 } : {};
    logger.error({ err, worker: name, ...repeated }, 'background worker failed');
    failing = { message, runs: 1 };
  };
  const timer = setInterval(() => {
    if (running || stopped) return;
    running = Promise.resolve()
      .then(tick)
      .then(() => (failing = null), fail)
      .finally(() => (running = null));
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
