import { createHook } from 'node:async_hooks';

/**
 * Counts promises created while `fn` runs that are still pending once it has settled and the event
 * loop has drained: a promise prazo leaves pending (a backoff sleep never woken, a race never
 * settled) is a leak of everything its closures hold. An async_hooks PROMISE resource is "resolved"
 * when `promiseResolve` fires for it.
 *
 * Some pending promises are legitimately the harness's own (the `await` that runs this very
 * function), so a leak is judged by growth: the count must not grow with the number of calls.
 */
export async function pendingPromisesAfter(
  fn: () => Promise<void>,
  drain: () => Promise<void>,
): Promise<number> {
  const pending = new Set<number>();
  const hook = createHook({
    init(asyncId, type) {
      if (type === 'PROMISE') pending.add(asyncId);
    },
    promiseResolve(asyncId) {
      pending.delete(asyncId);
    },
  });
  hook.enable();
  try {
    await fn();
    await drain();
  } finally {
    hook.disable();
  }
  return pending.size;
}
