import type { Logger } from '../log.ts';

/**
 * A background loop: runs `tick` every `intervalMs`, never overlapping itself,
 * logging (not throwing) failures. Work that must survive a restart keeps its
 * due times in the database; the loop only decides when to look.
 */
export function startLoop(name: string, intervalMs: number, logger: Logger, tick: () => Promise<unknown> | unknown): { stop(): Promise<void> } {
  let running: Promise<unknown> | null = null;
  let stopped = false;
  const timer = setInterval(() => {
    if (running || stopped) return;
    running = Promise.resolve()
      .then(tick)
      .catch((err) => logger.error({ err, worker: name }, 'background worker failed'))
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
