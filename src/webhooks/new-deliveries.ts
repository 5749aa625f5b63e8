/**
 * The targets (receivers) this process gave new deliveries since the delivery
 * worker last looked. Every new event wakes the worker; reading only these
 * spares it looking for every target with due deliveries at each event (then
 * a walk of every due row, which with a slow receiver's backlog grew to most
 * of the event loop). What falls due otherwise (a retry's time, another
 * process's replay) is found by the worker's full pump, every second.
 */
export class NewDeliveries {
  #targets = new Set<string>();

  add(target: string): void {
    this.#targets.add(target);
  }

  /** The targets added since the last call. */
  take(): string[] {
    const targets = [...this.#targets];
    this.#targets.clear();
    return targets;
  }
}
