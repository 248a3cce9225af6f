import type { FailureVerdict } from './classify.js';

/**
 * Two failures of one round (original and hedge): retried only if both allow it, at once only if both
 * are connect failures, and never sooner than the longer `Retry-After` either server asked for (R3).
 * A final failure's kind and status are kept, so the reason given is the one that stopped the call.
 */
export function mergeFailures(a: FailureVerdict, b: FailureVerdict): FailureVerdict {
  const waits = [a.retryAfterMs, b.retryAfterMs].filter((w): w is number => w !== undefined);
  const blame = !a.retryable ? a : b;
  return {
    retryable: a.retryable && b.retryable,
    immediate: a.immediate && b.immediate,
    kind: blame.kind,
    ...(blame.status === undefined ? {} : { status: blame.status }),
    ...(waits.length === 0 ? {} : { retryAfterMs: Math.max(...waits) }),
  };
}
