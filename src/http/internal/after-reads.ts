// Work that waits until the event loop has read this turn's requests: a
// setImmediate callback runs in the check phase, after the poll phase read
// every socket that was ready. Handling a turn's requests together, after
// all of them are read, instead of alternating reads and handling, costs this
// VM about half the CPU per request (docs/DECISIONS.md), and one look at other
// processes' commits then serves requests that all arrived before it.

let waiting: (() => void)[] = [];

function runWaiting(): void {
  const ready = waiting;
  waiting = [];
  for (const fn of ready) fn();
}

/** Calls `fn` once this turn's requests are read, with the others waiting. */
export function afterReads(fn: () => void): void {
  if (waiting.push(fn) === 1) setImmediate(runWaiting);
}

/** Resolves once this turn's requests are read. */
export function readsDone(): Promise<void> {
  return new Promise(afterReads);
}
