import type { Timer } from '../clock/clock.js';
import type { DependencyCore } from './core.js';

/**
 * The plumbing of one call, apart from its plan: how its end is delivered (its transport's: a
 * promise for `execute`, handler callbacks for prazo/http), the one pending timer (hedge or backoff), and the
 * failure *held* while its fate is open (a racing copy still runs, or a backoff is under way). A held
 * failed result is always either delivered or handed to `discard` (a 503 whose body must be drained),
 * never dropped.
 */
export abstract class Settlement<T> {
  /** The plan the call runs with (its attempts read it too). */
  readonly core: DependencyCore;
  /** True once the call's end was delivered. */
  settled = false;
  protected timer: Timer | undefined;
  #heldOk = false;
  #held: unknown;

  constructor(core: DependencyCore) {
    this.core = core;
  }

  /** Hands the call's end to its caller: `ok` with the value, or the error. Called once. */
  protected abstract deliver(ok: boolean, value: unknown): void;

  /** Releases a result that will not be delivered (a retried 503, a hedge that answered second). */
  protected abstract discard(value: T): void;

  /** Stops every attempt in flight (the caller gave up). */
  protected abstract cancelAll(reason: unknown): void;

  /** The caller gave up: every attempt stops, the call ends with `reason`. */
  abandon(reason: unknown): void {
    if (this.settled) return;
    this.cancelAll(reason);
    this.releaseHeld();
    this.finish(false, reason);
  }

  protected finish(ok: boolean, value: unknown): void {
    this.settled = true;
    this.clearTimer();
    this.deliver(ok, value);
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

  /** Releases a held failed *result* (its connection and slot go back), keeping a held thrown error. */
  protected releaseHeldResult(): void {
    if (this.#heldOk) this.releaseHeld();
  }

  protected releaseHeld(): void {
    if (this.#heldOk) this.discard(this.#held as T);
    this.#heldOk = false;
    this.#held = undefined;
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
