import { beforeAll, describe, expect, it } from 'vitest';
import { isPrazoError } from '../../../src/errors/index.js';
import { formatTable, num } from '../report/table.js';
import { FAULTS, type FaultCase, TIMEOUTS, tolerance } from './catalogue.js';
import { type CellResult, KINDS, runCell } from './run-cell.js';

/**
 * The fault matrix of issue 10: every fault × {idempotent GET, POST without key, POST with key},
 * through prazo's HTTP client against real loopback servers. For each cell: the typed error, when it
 * fired against the configured phase timeout (SPEC C2, D6: within max(20 ms, 10 %)), and how many
 * copies the server received (SPEC R2-R5: an unkeyed POST is never received twice).
 */

const configured = (f: FaultCase): number | undefined =>
  f.expected.phase === 'connect'
    ? TIMEOUTS.connectMs
    : f.expected.phase === 'response'
      ? TIMEOUTS.responseMs
      : f.expected.phase === 'body'
        ? TIMEOUTS.bodyMs
        : undefined;

const results = new Map<string, CellResult>();
const cell = (f: FaultCase, kind: string): CellResult => results.get(`${f.name}/${kind}`)!;

beforeAll(async () => {
  let id = 0;
  for (const fault of FAULTS) {
    for (const kind of KINDS) results.set(`${fault.name}/${kind}`, await runCell(fault, kind, ++id));
  }
  const rows = FAULTS.map((f) => {
    const limit = configured(f);
    return [
      f.name,
      limit === undefined ? '-' : `${f.expected.phase} ${limit} ms ±${tolerance(limit)}`,
      ...KINDS.map((k) => {
        const r = cell(f, k);
        return `${r.outcome} @${num(r.firedMs)} ms, seen ${r.seen}`;
      }),
    ];
  });
  const dupes = [...results.values()].reduce((n, r) => n + r.duplicateWrites, 0);
  console.log(
    `\nFault matrix (connect ${TIMEOUTS.connectMs} ms, response ${TIMEOUTS.responseMs} ms, body ` +
      `${TIMEOUTS.bodyMs} ms, deadline ${TIMEOUTS.deadlineMs} ms; "seen" = copies the server received)\n` +
      `${formatTable(['fault', 'phase timeout', 'GET', 'POST (no key)', 'POST + key'], rows)}\n` +
      `duplicate non-idempotent requests: ${dupes}\n`,
  );
}, 120_000);

describe('fault matrix', () => {
  it.each(FAULTS.map((f) => [f.name, f] as const))('%s', (_name, fault) => {
    for (const kind of KINDS) {
      const r = cell(fault, kind);
      const where = `${fault.name} × ${kind}: ${r.outcome} @${r.firedMs.toFixed(1)} ms, seen ${r.seen}`;
      const idempotent = kind !== 'POST';
      const retried = idempotent && fault.retried?.code.test(r.outcome) === true;
      const exp = fault.expected;
      if (exp.phase !== 'none') {
        expect(r.outcome, where).toBe(exp.code);
        expect(isPrazoError(r.error), where).toBe(true);
        const limit = configured(fault)!;
        expect(r.error, where).toMatchObject({ phase: exp.phase, timeoutMs: limit });
        expect(Math.abs(r.firedMs - limit), where).toBeLessThanOrEqual(tolerance(limit));
      } else if (!retried) {
        expect(r.outcome, where).toMatch(exp.code);
        expect(r.firedMs, where).toBeLessThan(exp.maxMs);
      }
      expect(r.seen, where).toBe(retried ? fault.retried!.seen : fault.seen);
      expect(r.duplicateWrites, where).toBe(0);
      if (kind === 'POST+key' && r.seen > 0) expect(r.keys, where).toHaveLength(1);
      if (kind !== 'POST+key') expect(r.keys, where).toHaveLength(0);
    }
  });

  it('received no unkeyed POST twice across the whole matrix (SPEC R5)', () => {
    expect(results.size).toBe(FAULTS.length * KINDS.length);
    for (const r of results.values()) if (r.kind === 'POST') expect(r.seen, r.fault).toBeLessThanOrEqual(1);
    expect([...results.values()].reduce((n, r) => n + r.duplicateWrites, 0)).toBe(0);
  });
});
