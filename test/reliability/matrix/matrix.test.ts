import { beforeAll, describe, expect, it } from 'vitest';
import { isPrazoError } from '../../../src/errors/index.js';
import { formatTable, num } from '../report/table.js';
import { CLIENT, FAULTS, type FaultCase, phaseMs, tolerance } from './catalogue.js';
import { type CellResult, KINDS, runMatrix } from './run-cell.js';

/**
 * The fault matrix of issue 10: every fault × {idempotent GET, POST without key, POST with key},
 * through prazo's HTTP client (retries, Retry-After and the budget included) against real loopback
 * servers. For each cell: the typed error, when each attempt's phase timer fired against its
 * configured time (SPEC C2, D6: within max(20 ms, 10 %)), the attempts made and the copies the
 * server received (SPEC R2-R5: an unkeyed POST is never received twice).
 */

let results = new Map<string, CellResult>();
const cell = (f: FaultCase, kind: string): CellResult => results.get(`${f.name}/${kind}`)!;
const ms = (n: number): string => num(n);

beforeAll(async () => {
  results = await runMatrix(FAULTS, KINDS);
  const rows = FAULTS.map((f) => [
    f.name,
    f.phase === undefined ? '-' : `${f.phase} ${phaseMs(f.phase)} ±${tolerance(phaseMs(f.phase))}`,
    ...KINDS.map((k) => {
      const r = cell(f, k);
      const each = f.phase === 'body' ? `${ms(r.totalMs)}` : r.attemptMs.map(ms).join('/');
      return `${r.outcome} [${each} ms] seen ${r.seen}`;
    }),
  ]);
  const dupes = [...results.values()].reduce((n, r) => n + r.duplicateWrites, 0);
  console.log(
    `\nFault matrix: p99 ${CLIENT.p99Ms} ms (attempt timeout ${Math.ceil(CLIENT.p99Ms * 1.4)} ms), ` +
      `${CLIENT.attempts} attempts, connect ${CLIENT.connectTimeoutMs} ms, response ${CLIENT.responseTimeoutMs} ms, ` +
      `body ${CLIENT.bodyTimeoutMs} ms, deadline ${CLIENT.deadlineMs} ms.\n` +
      'Each cell: outcome [duration of each attempt, or head→error for body faults] copies the server saw.\n' +
      `${formatTable(['fault', 'phase timeout', 'GET', 'POST (no key)', 'POST + key'], rows)}\n` +
      `duplicate non-idempotent requests: ${dupes}\n`,
  );
}, 180_000);

describe('fault matrix', () => {
  it.each(FAULTS.map((f) => [f.name, f] as const))('%s', (_name, fault) => {
    for (const kind of KINDS) {
      const r = cell(fault, kind);
      const end = kind === 'POST' ? fault.once : fault.idempotent;
      const where = `${fault.name} × ${kind}: ${r.outcome} [${r.attemptMs.map(ms).join('/')}] total ${ms(r.totalMs)} seen ${r.seen}`;
      expect(r.outcome, where).toMatch(end.code);
      expect(r.attemptMs, where).toHaveLength(end.attempts);
      expect(r.seen, where).toBe(end.seen);
      if (end.maxMs !== undefined) expect(r.totalMs, where).toBeLessThan(end.maxMs);
      if (end.minMs !== undefined) {
        expect(r.totalMs, where).toBeGreaterThanOrEqual(end.minMs);
        expect(r.gapMs, where).toBeGreaterThanOrEqual(end.minMs);
      }
      if (fault.phase !== undefined) {
        const limit = phaseMs(fault.phase);
        expect(isPrazoError(r.error), where).toBe(true);
        expect(r.error, where).toMatchObject({ phase: fault.phase, timeoutMs: limit });
        const fired = fault.phase === 'body' ? [r.totalMs] : r.attemptMs;
        for (const t of fired) expect(Math.abs(t - limit), where).toBeLessThanOrEqual(tolerance(limit));
      }
      expect(r.duplicateWrites, where).toBe(0);
      if (kind === 'POST+key' && r.seen > 0) expect(r.keys, where).toEqual([expect.stringMatching(/^key-/)]);
      if (kind !== 'POST+key') expect(r.keys, where).toHaveLength(0);
    }
  });

  it('received no unkeyed POST twice across the whole matrix (SPEC R5)', () => {
    expect(results.size).toBe(FAULTS.length * KINDS.length);
    for (const r of results.values()) if (r.kind === 'POST') expect(r.seen, r.fault).toBeLessThanOrEqual(1);
    expect([...results.values()].reduce((n, r) => n + r.duplicateWrites, 0)).toBe(0);
  });
});
