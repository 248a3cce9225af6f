import { subscribeAbort, unsubscribeAbort } from '../signal/shared-abort.js';

/**
 * Listens to a few AbortSignals (the caller's, a racing executor's) with one listener, reports the
 * first abort's reason, and removes itself from all of them when cleared. Created only when there is
 * a signal to watch: on Node 20 each listener costs more than the rest of an attempt. Subscribes
 * through the shared fan-out, so a caller signal shared by many concurrent calls carries one real
 * listener, not one per call (no MaxListenersExceededWarning past 10 calls).
 */
export class SignalWatch {
  readonly #signals: AbortSignal[] = [];
  readonly #listener: () => void;

  constructor(onAbort: (reason: Error) => void) {
    this.#listener = () => {
      const aborted = this.#signals.find((s) => s.aborted);
      onAbort((aborted?.reason as Error | undefined) ?? new Error('aborted'));
    };
  }

  add(signal: AbortSignal): void {
    this.#signals.push(signal);
    subscribeAbort(signal, this.#listener);
  }

  clear(): void {
    for (const signal of this.#signals) unsubscribeAbort(signal, this.#listener);
    this.#signals.length = 0;
  }
}
