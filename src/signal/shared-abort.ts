/**
 * Listening to a caller's AbortSignal without tripping Node's leak heuristic.
 *
 * A caller often shares one long-lived signal across many concurrent calls (a server's shutdown
 * signal, a batch's cancel). Adding one 'abort' listener per call puts N listeners on that signal and,
 * past 10, Node prints MaxListenersExceededWarning — a warning under normal load that would hide a real
 * leak. Instead each signal gets exactly one real listener, which fans out to the calls subscribed at
 * that moment; when the last one unsubscribes, the real listener is removed too, so a long-lived signal
 * holds nothing of ours between bursts.
 */

type Listener = () => void;

interface Fanout {
  readonly listeners: Set<Listener>;
  readonly dispatch: () => void;
}

const fanouts = new WeakMap<AbortSignal, Fanout>();

function createFanout(signal: AbortSignal): Fanout {
  const listeners = new Set<Listener>();
  const dispatch = (): void => {
    // The live set, not a copy: a listener that unsubscribes another (one call's end settling a
    // sibling) stops it from being called, as EventTarget skips a listener removed during dispatch.
    for (const listener of listeners) {
      listeners.delete(listener);
      try {
        listener();
      } catch (error) {
        // Like EventTarget: one failing listener neither stops the others nor disappears silently.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
    fanouts.delete(signal);
  };
  return { listeners, dispatch };
}

/**
 * Calls `listener` once when `signal` aborts. Pass the same function to {@link unsubscribeAbort} when
 * the work is done. Already aborted signals are the caller's to check first: subscribing to one never
 * calls back (not synchronously, not later) and keeps nothing.
 */
export function subscribeAbort(signal: AbortSignal, listener: Listener): void {
  if (signal.aborted) return;
  let fanout = fanouts.get(signal);
  if (fanout === undefined) {
    fanout = createFanout(signal);
    fanouts.set(signal, fanout);
    signal.addEventListener('abort', fanout.dispatch, { once: true });
  }
  fanout.listeners.add(listener);
}

/**
 * Stops `listener` from being called, also while the signal's abort is being dispatched; removes the
 * signal's real listener when it was the last one.
 */
export function unsubscribeAbort(signal: AbortSignal, listener: Listener): void {
  const fanout = fanouts.get(signal);
  if (fanout === undefined || !fanout.listeners.delete(listener)) return;
  if (fanout.listeners.size === 0) {
    signal.removeEventListener('abort', fanout.dispatch);
    fanouts.delete(signal);
  }
}
