import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../clock/system.js';
import { SampledPool } from '../demo/services/dispatchers.js';

/**
 * The drill judges the gateway's pool from its samples (a dry pool fails, SPEC V2). A sample taken
 * by a timer that fires late — the process stalled, as it does on a loaded machine — must not count
 * as busy the connections whose answers arrived during the stall and wait, unread, in their sockets:
 * Node runs expired timers before it reads the sockets (issue 23: `prazo drill --load 5` failed on
 * "15 of 15 busy" samples that were 12 of 15 once read). Real sockets on loopback.
 */

let server: Server | undefined;
let pool: SampledPool | undefined;

afterEach(async () => {
  await pool?.close();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
  pool = undefined;
});

/** Blocks the event loop for `ms` (a stall of the process). */
function stall(ms: number): void {
  const until = systemClock.now() + ms;
  while (systemClock.now() < until) {
    // busy
  }
}

describe('the gateway pool sampler', () => {
  it('does not count answers that arrived during a stall as connections held', async () => {
    const n = 4;
    let answered = 0;
    let onAllAnswered: (() => void) | undefined;
    server = createServer((_req, res) => {
      res.end('ok', () => {
        answered += 1;
        // The last answer is on the wire: stall before the client side reads any of them.
        if (answered % n === 0) onAllAnswered?.();
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    pool = new SampledPool(`http://127.0.0.1:${port}`, n, systemClock, 10);
    const send = () =>
      Array.from({ length: n }, () =>
        pool!.pool.request({ path: '/', method: 'GET' }).then((r) => r.body.text()),
      );
    await Promise.all(send()); // n connections open
    // Three stalls: the machine running the tests may stall this process anywhere else too, so the
    // claim is judged on most of them (before the fix, the sample after every stall counted 1 held).
    const firstAfter: number[] = [];
    for (let round = 0; round < 3; round += 1) {
      const stalledAt = new Promise<number>((resolve) => {
        onAllAnswered = () => {
          onAllAnswered = undefined;
          stall(60);
          resolve(systemClock.epochNow());
        };
      });
      const batch = Promise.all(send());
      const at = await stalledAt;
      await batch;
      await new Promise((resolve) => systemClock.setTimer(() => resolve(undefined), 40));
      // The first sample after the stall: every answer was in its socket by then.
      const after = pool.samples().filter((s) => s.epochMs >= at);
      expect(after.length).toBeGreaterThan(0);
      firstAfter.push(after[0]!.running);
    }
    expect(firstAfter.filter((running) => running === 0).length, String(firstAfter)).toBeGreaterThanOrEqual(
      2,
    );
  });
});
