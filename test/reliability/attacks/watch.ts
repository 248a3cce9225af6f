/**
 * What the attack files share to follow a call without awaiting it: a promise watched (its rejection
 * never left unhandled) and the pending promise work let run.
 */

/** Lets the promise reactions queued so far (and the ones they queue) run. */
export const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i += 1) await new Promise<void>((resolve) => setImmediate(resolve));
};

export interface Box<T> {
  state: 'pending' | 'ok' | 'err';
  value?: T;
  error?: unknown;
}

/** Watches a promise without ever leaving its rejection unhandled. */
export function watch<T>(p: Promise<T>): Box<T> {
  const box: Box<T> = { state: 'pending' };
  p.then(
    (value) => {
      box.state = 'ok';
      box.value = value;
    },
    (error: unknown) => {
      box.state = 'err';
      box.error = error;
    },
  );
  return box;
}
