/**
 * Polls until check() gives something truthy and returns it; fails after
 * timeoutMs. Generous by default: the suite runs two files at once on a
 * 2-core machine, where a 3 s wait once timed out under load.
 */
export async function waitFor<T>(check: () => T | Promise<T>, what: string, timeoutMs = 10_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
