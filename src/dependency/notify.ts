import type { DependencyCore } from './core.js';
import type { AttemptKind } from './types.js';

/**
 * The executor's decisions as events. Each helper takes primitives and builds its event only when
 * someone listens: with no listener, a call allocates nothing for events (SPEC R7 metrics hook here).
 */

export function attempt(
  core: DependencyCore,
  kind: AttemptKind,
  attempt: number,
  instance: string | undefined,
): void {
  if (!core.events.active) return;
  const dependency = core.name;
  core.events.emit(
    instance === undefined
      ? { type: 'attempt', dependency, kind, attempt }
      : { type: 'attempt', dependency, kind, attempt, instance },
  );
}

/** The adaptive throttle refused a call: the window's counts and the probability it was refused with. */
export function throttled(
  core: DependencyCore,
  requests: number,
  accepts: number,
  probability: number,
): void {
  if (core.events.active)
    core.events.emit({ type: 'throttled', dependency: core.name, requests, accepts, probability });
}

export function budgetRefused(core: DependencyCore, kind: 'retry' | 'hedge'): void {
  if (core.events.active) core.events.emit({ type: 'budget-refused', dependency: core.name, kind });
}

export function retryAfter(core: DependencyCore, waitMs: number, honoured: boolean): void {
  if (core.events.active) core.events.emit({ type: 'retry-after', dependency: core.name, waitMs, honoured });
}

export function insufficient(core: DependencyCore, remainingMs: number, attempt: number): void {
  if (!core.events.active) return;
  const neededMs = core.p99Ms;
  core.events.emit({ type: 'deadline-insufficient', dependency: core.name, remainingMs, neededMs, attempt });
}

/** A hedge was due and not sent: too little of the deadline left for it (`hedge/policy.ts`). */
export function hedgeSkipped(core: DependencyCore, remainingMs: number, neededMs: number): void {
  if (core.events.active) {
    core.events.emit({
      type: 'hedge-skipped',
      dependency: core.name,
      reason: 'deadline',
      remainingMs,
      neededMs,
    });
  }
}

export function hedgeWon(core: DependencyCore, attempt: number): void {
  if (core.events.active) core.events.emit({ type: 'hedge-won', dependency: core.name, attempt });
}

export function timerLate(core: DependencyCore, lateMs: number): void {
  if (core.events.active) core.events.emit({ type: 'timer-late', dependency: core.name, lateMs });
}

export function limited(
  core: DependencyCore,
  kind: AttemptKind,
  reason: 'queue-full' | 'queue-timeout' | 'no-slot',
  waitedMs: number,
): void {
  if (!core.events.active || core.limiter === undefined) return;
  const { limit, inFlight, queued } = core.limiter;
  core.events.emit({
    type: 'limited',
    dependency: core.name,
    kind,
    reason,
    limit,
    inFlight,
    queued,
    waitedMs,
  });
}

export function pushback(core: DependencyCore, kind: AttemptKind, attempt: number): void {
  if (core.events.active) core.events.emit({ type: 'pushback', dependency: core.name, kind, attempt });
}
