import type { Timer } from '../clock/clock.js';
import { subscribeAbort, unsubscribeAbort } from '../signal/shared-abort.js';
import type { DependencyCore } from './core.js';
import { discardSafely } from './outcome.js';
import type { ExecuteOptions } from './types.js';

/**
 * The plumbing of one call, apart from its plan: the promise handed to the caller, the caller's
 * abort listener, the one pending timer (hedge or backoff), and the failure *held* while its fate is
 * open (a racing copy still runs, or a backoff is under way). A held failed result is always either
 * returned or handed to `discard` (a 503 whose body must be drained), never dropped.
 */
export abstract class Settlement<T> {
  protected readonly core: DependencyCore;
  protected readonly options: ExecuteOptions<T>;
  protected settled = false;
  protected timer: Timer | undefined;
  #resolve!: (value: T) => void;
  #reject!: (error: unknown) => void;
  #heldOk = false;
  #held: unknown;
  #onCallerAbort: (() => void) | undefined;

  constructor(core: DependencyCore, options: ExecuteOptions<T>) {
    this.core = core;
    this.options = options;
  }

  /** The caller gave up (its signal aborted): stop every attempt. */
  protected abstract cancelAll(reason: unknown): void;

  /** Creates the caller's promise and listens to the caller's signal. */
  protected open(): Promise<T> {
    const promise = new Promise<T>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    const signal = this.options.signal;
    if (signal !== undefined) {
      this.#onCallerAbort = () => {
        if (this.settled) return;
        this.cancelAll(signal.reason);
        this.releaseHeld();
        this.finish(false, signal.reason);
      };
      subscribeAbort(signal, this.#onCallerAbort);
    }
    return promise;
  }

  protected finish(ok: boolean, value: unknown): void {
    this.settled = true;
    this.clearTimer();
    const signal = this.options.signal;
    if (this.#onCallerAbort !== undefined && signal !== undefined)
      unsubscribeAbort(signal, this.#onCallerAbort);
    if (ok) this.#resolve(value as T);
    else this.#reject(value);
  }

  /** Keeps the latest failure; a failed result it replaces is released. */
  protected hold(ok: boolean, value: unknown): void {
    this.releaseHeld();
    this.#heldOk = ok;
    this.#held = value;
  }

  /** Takes the held failure out: `ok` true for a failed result, false for a thrown error. */
  protected takeHeld(): { readonly ok: boolean; readonly value: unknown } {
    const taken = { ok: this.#heldOk, value: this.#held };
    this.#heldOk = false;
    this.#held = undefined;
    return taken;
  }

  protected releaseHeld(): void {
    if (this.#heldOk) this.discard(this.#held as T);
    this.#heldOk = false;
    this.#held = undefined;
  }

  protected discard(value: T): void {
    discardSafely(this.options.discard, value, this.core.name);
  }

  protected clearTimer(): void {
    if (this.timer !== undefined) {
      this.core.clock.clearTimer(this.timer);
      this.timer = undefined;
    }
  }

  /** A value that arrived after its attempt was over (timed out or cancelled): release it. */
  late(value: T): void {
    this.discard(value);
  }
}
