import { neededMs } from '../deadline/fits.js';
import type { DependencyCore } from './core.js';
import type { CallTrace } from './trace.js';
import type { AttemptKind } from './types.js';

/**
 * The executor's decisions as events, and as events of the call's trace when it is traced. Each
 * helper takes primitives and builds its event only when someone listens: with no listener and no
 * trace, a call allocates nothing for events (SPEC R7 metrics hook here).
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
  trace: CallTrace | undefined,
  requests: number,
  accepts: number,
  probability: number,
): void {
  if (core.events.active)
    core.events.emit({ type: 'throttled', dependency: core.name, requests, accepts, probability });
  trace?.event('throttled', {
    'prazo.throttle.requests': requests,
    'prazo.throttle.accepts': accepts,
    'prazo.throttle.probability': probability,
  });
}

export function budgetRefused(
  core: DependencyCore,
  trace: CallTrace | undefined,
  kind: 'retry' | 'hedge',
): void {
  if (core.events.active) core.events.emit({ type: 'budget-refused', dependency: core.name, kind });
  trace?.event('budget-refused', { 'prazo.attempt.kind': kind });
}

export function retryAfter(
  core: DependencyCore,
  trace: CallTrace | undefined,
  waitMs: number,
  honoured: boolean,
): void {
  if (core.events.active) core.events.emit({ type: 'retry-after', dependency: core.name, waitMs, honoured });
  trace?.event('retry-after', { 'prazo.wait_ms': waitMs, 'prazo.honoured': honoured });
}

export function insufficient(
  core: DependencyCore,
  trace: CallTrace | undefined,
  remaining: number,
  attempt: number,
): void {
  const needed = neededMs(core.p99Ms); // as the error says it: the rule applied, at least 1 ms
  const remainingMs = remaining > 0 ? remaining : 0; // (a deadline read NaN: 0)
  if (core.events.active)
    core.events.emit({
      type: 'deadline-insufficient',
      dependency: core.name,
      remainingMs,
      neededMs: needed,
      attempt,
    });
  trace?.event('deadline-insufficient', {
    'prazo.time_left_ms': remainingMs,
    'prazo.needed_ms': needed,
    'prazo.attempt': attempt,
  });
}

/** A hedge was due and not sent: too little of the deadline left for it (`hedge/policy.ts`). */
export function hedgeSkipped(
  core: DependencyCore,
  trace: CallTrace | undefined,
  remainingMs: number,
  neededMs: number,
): void {
  if (core.events.active) {
    const dependency = core.name;
    core.events.emit({ type: 'hedge-skipped', dependency, reason: 'deadline', remainingMs, neededMs });
  }
  trace?.event('hedge-skipped', { 'prazo.time_left_ms': remainingMs, 'prazo.needed_ms': neededMs });
}

export function hedgeWon(core: DependencyCore, attempt: number): void {
  if (core.events.active) core.events.emit({ type: 'hedge-won', dependency: core.name, attempt });
}

export function timerLate(core: DependencyCore, lateMs: number): void {
  if (core.events.active) core.events.emit({ type: 'timer-late', dependency: core.name, lateMs });
}

export function limited(
  core: DependencyCore,
  trace: CallTrace | undefined,
  kind: AttemptKind,
  reason: 'queue-full' | 'queue-timeout' | 'no-slot',
  waitedMs: number,
): void {
  const limiter = core.limiter;
  if (core.events.active && limiter !== undefined) {
    const { limit, inFlight, queued } = limiter;
    const dependency = core.name;
    core.events.emit({ type: 'limited', dependency, kind, reason, limit, inFlight, queued, waitedMs });
  }
  trace?.event('limited', {
    'prazo.attempt.kind': kind,
    'prazo.reason': reason,
    'prazo.waited_ms': waitedMs,
  });
}

export function pushback(
  core: DependencyCore,
  trace: CallTrace | undefined,
  kind: AttemptKind,
  attempt: number,
): void {
  if (core.events.active) core.events.emit({ type: 'pushback', dependency: core.name, kind, attempt });
  trace?.event('pushback', { 'prazo.attempt': attempt, 'prazo.attempt.kind': kind });
}
