import { beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../src/cli/main.js';
import type { DrillReport } from '../../src/drill/report.js';
import { demoServices, ensureBuilt } from './helpers.js';

/**
 * `prazo drill` (SPEC V2) against the demo's own services, on real processes and sockets, loaded by the demo's open-loop generator:
 * it passes against the calibrated prazo stack, at the demo's rate and at 5× it (issue 23), and fails
 * against naive clients with 30 s timeouts, whose pool runs dry (SPEC C6); bad input exits 2.
 *
 * Each drill runs the same short phases, 1.5 s healthy then 1.5 s of incident (the defaults are 3 s
 * and 10 s): the double holds each call 350 ms, so the pool is at its steady state within half a
 * second, and a pool that cannot hold the load runs dry well inside the incident (naive's 15
 * connections at 0.75 s, held 30 s; 5× the load without failing fast, 35 busy, at 0.15 s).
 */
const PHASES = ['--healthy', '1.5', '--duration', '1.5'];
async function drill(args: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await run(['drill', ...args], { stdout: (s) => (out += s), stderr: (s) => (err += s) });
  return { code, out, err };
}

beforeAll(() => ensureBuilt(), 120_000);

describe('prazo drill against the demo services (SPEC V2, C6)', () => {
  it('passes against a calibrated service: the independent route keeps answering', async () => {
    const { code, out } = await drill([...PHASES, '--json']);
    const report = JSON.parse(out) as DrillReport;
    expect(report.doubleLatencyMs).toBe(350); // ceil(250 × 1.4): the supplier's configured timeout
    expect(report.doubleArrivals).toBeGreaterThan(15); // 30 checkouts in 1.5 s at 20/s
    expect(report.independent.successPct).toBeGreaterThanOrEqual(99.9);
    expect(report.little).toMatchObject({ poolSize: 15, rps: 30, maxLatencyMs: 500, ok: true });
    expect(report.pool!.meanBusy).toBeLessThan(0.75 * report.pool!.connections);
    // The p99 bound comes from the healthy phase of the same run (issue 23), not a flat 1 s.
    // Every healthy-phase request ended (1.5 s at 10/s); one lost to a stalled machine (29 of 30 at
    // load 11) is the healthy phase's warning, not the drill's verdict (its dependency answered at once).
    expect(report.healthy!.independent.ended).toBe(15);
    expect(report.healthy!.independent.ok).toBeGreaterThanOrEqual(13);
    expect(report.thresholds.p99.healthyP99Ms).toBe(report.healthy!.independent.p99Ms);
    // 2× the healthy p99, at least 60 ms, plus the machine's longest stall in the incident (issue 23).
    expect(report.thresholds.maxP99Ms).toBe(
      Math.max(2 * report.healthy!.independent.p99Ms, 60) + report.thresholds.p99.stallMs,
    );
    expect(report.thresholds.p99.stallMs).toBe(report.machine!.incident.longestMs);
    expect(report.pass, report.reasons.join('; ')).toBe(true);
    expect(code).toBe(0);
    expect(demoServices(process.pid)).toEqual([]);
  }, 30_000);

  it('passes at five times the load on the dependent route (issue 23): the pool never runs dry', async () => {
    const { code, out } = await drill(['--load', '5', ...PHASES, '--json']);
    const report = JSON.parse(out) as DrillReport;
    expect(report).toMatchObject({ load: 5, rate: 100, independentRate: 10 });
    expect(report.healthy!.dependent!.ended).toBe(150); // 1.5 s at 100/s, the double answering at once
    expect(report.dependent!.ended).toBe(150);
    expect(report.little).toMatchObject({ rps: 110, expectedBusy: 35, ok: false }); // held, it would not fit
    expect(report.independent.successPct).toBeGreaterThanOrEqual(99.9);
    expect(report.pool!.maxBusy, JSON.stringify(report.pool)).toBeLessThan(15);
    expect(report.pass, report.reasons.join('; ')).toBe(true);
    expect(code).toBe(0);
    expect(demoServices(process.pid)).toEqual([]);
  }, 40_000);

  it('fails against naive 30 s timeouts: the pool runs dry and the independent route with it', async () => {
    const { code, out } = await drill([...PHASES, '--demo-stack', 'naive']);
    expect(out).toContain('answering at 30000 ms');
    expect(out).toMatch(
      /Little's law: 15 connections at 30 req\/s tolerate 500 ms per call.*the pool runs dry/,
    );
    expect(out).toMatch(/measured pool: [\d.]+ busy on average, 15 at most, of 15/);
    expect(out).toMatch(/^FAIL: independent routes: [\d.]+% succeeded, below 99.9%/m);
    expect(out).toMatch(/the pool ran dry: 15 of 15 connections busy at most/);
    expect(code).toBe(1);
    expect(demoServices(process.pid)).toEqual([]);
  }, 30_000);

  it('exits 2 on bad input, naming the problem, before starting anything', async () => {
    const unknown = await drill(['--dependency', 'nope']);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/"nope" is not in .*\(orders, inventory, supplier\)/);
    const target = await drill(['--target', 'ftp://127.0.0.1:1']);
    expect(target.code).toBe(2);
    expect(target.err).toContain('`target` must be an http(s) URL');
    expect(target.err).toContain('`independent` routes are required');
    expect((await drill(['--rate', 'fast'])).code).toBe(2);
    const load = await drill(['--load', '0']);
    expect(load.code).toBe(2);
    expect(load.err).toContain('`load`');
    expect((await drill(['--config', 'no-such-file.yaml'])).code).toBe(2);
  });
});
