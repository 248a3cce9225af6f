import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Deadline } from '../../../src/deadline/deadline.js';
import { callWithDeadline } from '../../../src/deadline/index.js';
import { createDependency } from '../../../src/dependency/index.js';
import { createHttpClient } from '../../../src/http/index.js';
import { type FaultServer, headersAfter, startHttpFault } from '../faults/http-faults.js';

/**
 * One long-lived AbortSignal shared by many concurrent calls is a normal pattern (a server's shutdown
 * signal, a batch's cancel). Every prazo entry point that listens to a caller's signal must leave no
 * listener behind, and must not trip Node's leak heuristic (MaxListenersExceededWarning at more than
 * 10 listeners), which the issue forbids: a warning that fires under normal load hides a real leak.
 */

const CONCURRENT = 32;
const warnings: Error[] = [];
const onWarning = (w: Error): void => {
  warnings.push(w);
};
beforeEach(() => {
  warnings.length = 0;
  process.on('warning', onWarning);
});
afterEach(() => {
  process.off('warning', onWarning);
});

const wait = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const maxListenerWarnings = async (): Promise<string[]> => {
  await wait(10); // process warnings are emitted on a later tick
  return warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message);
};

describe(`a caller signal shared by ${CONCURRENT} concurrent calls`, () => {
  let server: FaultServer;
  beforeEach(async () => {
    server = await startHttpFault('slow-ish', headersAfter(30));
  });
  afterEach(async () => {
    await server.close();
  });

  it('prazo/http request(): no listener left, no MaxListenersExceededWarning', async () => {
    const shared = new AbortController();
    const client = createHttpClient({
      name: 'shared',
      origin: server.origin,
      p99Ms: 200,
      connections: CONCURRENT,
    });
    const calls = Array.from({ length: CONCURRENT }, async (_, i) => {
      const res = await client.request(`/call/${i}`, { signal: shared.signal, deadline: 2_000 });
      await res.body.text();
    });
    await Promise.all(calls);
    await client.destroy();
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
    expect(await maxListenerWarnings()).toEqual([]);
  });

  it('createDependency().execute(): no listener left, no MaxListenersExceededWarning', async () => {
    const shared = new AbortController();
    const dep = createDependency({ name: 'shared', p99Ms: 50 });
    const calls = Array.from({ length: CONCURRENT }, () =>
      dep.execute(() => wait(30), {
        idempotent: true,
        signal: shared.signal,
        deadline: Deadline.after(2_000),
      }),
    );
    await Promise.all(calls);
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
    expect(await maxListenerWarnings()).toEqual([]);
  });

  it('callWithDeadline(): no listener left, no MaxListenersExceededWarning', async () => {
    const shared = new AbortController();
    const calls = Array.from({ length: CONCURRENT }, () =>
      callWithDeadline(Deadline.after(2_000), {
        name: 'shared',
        p99Ms: 10,
        signal: shared.signal,
        execute: () => wait(30),
      }),
    );
    await Promise.all(calls);
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
    expect(await maxListenerWarnings()).toEqual([]);
  });
});
