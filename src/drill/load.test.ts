import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../clock/system.js';
import { DemoHeaders } from '../demo/constants.js';
import { runDrillLoad, summarize } from './load.js';

/**
 * The drill's load (SPEC V2) on the demo's open-loop generator, against a real loopback server: the
 * offered rate holds whatever the service does (a server that never answers still gets every request),
 * the paths of a group interleave evenly, and the counts the verdict reads add up.
 */

interface Arrival {
  readonly path: string;
  readonly atMs: number;
  readonly giveUp: string | undefined;
}

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void) {
  const arrivals: Arrival[] = [];
  const server = createServer((req, res) => {
    arrivals.push({
      path: req.url ?? '',
      atMs: systemClock.now(),
      giveUp: req.headers[DemoHeaders.giveUp] as string | undefined,
    });
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = async (): Promise<void> => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  };
  return { origin, arrivals, close };
}

describe('drill load: open loop, even arrivals (SPEC V2)', () => {
  it('sends rate × duration requests whatever the answers, and counts ok, non-2xx and timeouts', async () => {
    const target = await serve((req, res) => {
      if (req.url === '/ok') res.end('ok');
      else if (req.url === '/fail') {
        res.statusCode = 503;
        res.end();
      }
      // '/hang' never answers: the probe timeout abandons it
    });
    try {
      const { dependent, independent } = await runDrillLoad({
        origin: target.origin,
        dependent: ['/hang'],
        independent: ['/ok', '/fail'],
        durationS: 1,
        rate: 10,
        independentRate: 20,
        connections: 50,
        probeTimeoutMs: 2000, // generous: the machine is shared; /hang is abandoned at it all the same
        clock: systemClock,
      });
      // Open loop: every one of the 10 hanging requests was sent although none was ever answered.
      expect(target.arrivals.filter((a) => a.path === '/hang')).toHaveLength(10);
      expect(dependent).toMatchObject({
        ended: 10,
        ok: 0,
        non2xx: 0,
        errors: 10,
        timeouts: 10,
        successPct: 0,
      });
      expect(independent).toMatchObject({
        ended: 20,
        ok: 10,
        non2xx: 10,
        errors: 0,
        timeouts: 0,
        successPct: 50,
      });
      expect(independent.p99Ms).toBeLessThan(2000);
      // The drill's own load carries no demo bookkeeping header to the user's service.
      expect(target.arrivals.every((a) => a.giveUp === undefined)).toBe(true);
    } finally {
      await target.close();
    }
  });

  it('interleaves the paths of a group: one request every 1/rate s, not a burst per path', async () => {
    const target = await serve((_req, res) => res.end());
    try {
      await runDrillLoad({
        origin: target.origin,
        dependent: [],
        independent: ['/a', '/b'],
        durationS: 1,
        rate: 0,
        independentRate: 20,
        connections: 1,
        probeTimeoutMs: 1000,
        clock: systemClock,
      });
      const paths = target.arrivals.map((a) => a.path);
      expect(paths).toHaveLength(20);
      // Alternating, in send order (a burst per path would send all of /a's first tick together).
      for (let i = 1; i < paths.length; i += 1) expect(paths[i], `arrival ${i}`).not.toBe(paths[i - 1]);
      const span = target.arrivals.at(-1)!.atMs - target.arrivals[0]!.atMs;
      expect(span).toBeGreaterThan(700); // 19 gaps of 50 ms = 950 ms; a burst would be ~0
    } finally {
      await target.close();
    }
  });

  it('summarizes results the way the report reads them', () => {
    const r = (outcome: 'ok' | 'error' | 'timeout', status: number, latencyMs: number) => ({
      route: '/x',
      sentMs: 0,
      latencyMs,
      outcome,
      status,
    });
    const s = summarize(
      ['/x'],
      [r('ok', 200, 10), r('error', 204, 20), r('error', 500, 30), r('error', 0, 5), r('timeout', 0, 99)],
    );
    expect(s).toMatchObject({
      ended: 5,
      ok: 2,
      non2xx: 1,
      errors: 2,
      timeouts: 1,
      successPct: 40,
      maxMs: 30,
    });
    expect(summarize([], [])).toMatchObject({ ended: 0, successPct: undefined, p99Ms: 0, maxMs: 0 });
  });
});
