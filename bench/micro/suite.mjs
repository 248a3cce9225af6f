import { fileURLToPath } from 'node:url';
import { runChild } from '../lib/child.mjs';
import { goal, rotate, round, summarize } from '../lib/stats.mjs';
import { MICRO_CASES } from './cases.mjs';

/** Every micro case in its own process, `runs` times, order rotated; median and min–max of the runs. */
const RUN_CASE = fileURLToPath(new URL('./run-case.mjs', import.meta.url));
/**
 * Goal of issue 25 (issue 13's was 300): the executor's fixed cost per call (no I/O: a resolved
 * operation), in ns.
 */
export const EXECUTOR_GOAL_NS = 250;
const EXECUTOR_CASE = 'executor execute() fixed cost';
/** Goal of issue 15: an instance pick with 3 and with 100 instances, in ns. */
export const PICK_GOAL_NS = 100;
const PICK_CASES = ['instance pick, 3 instances', 'instance pick, 100 instances'];

export async function runMicroSuite({ runs, batchMs, batches, log }) {
  const names = MICRO_CASES.map((c) => c.name);
  const results = Object.fromEntries(names.map((n) => [n, []]));
  const skipped = {};
  for (let r = 0; r < runs; r += 1) {
    for (const name of rotate(names, r)) {
      if (skipped[name]) continue;
      const out = await runChild(
        RUN_CASE,
        ['--case', name, '--batch-ms', String(batchMs), '--batches', String(batches)],
        { timeoutMs: 60_000 },
      );
      if (out.skipped) skipped[name] = out.skipped;
      else results[name].push(out.nsPerOp);
    }
    log(`  micro round ${r + 1}/${runs} done`);
  }
  const cases = MICRO_CASES.map((c) => {
    if (skipped[c.name]) return { name: c.name, kind: c.kind, about: c.about, skipped: skipped[c.name] };
    const s = summarize(results[c.name]);
    return {
      name: c.name,
      kind: c.kind,
      about: c.about,
      nsPerOp: { median: round(s.median, 1), min: round(s.min, 1), max: round(s.max, 1) },
      runs: s.n,
    };
  });
  const executor = cases.find((c) => c.name === EXECUTOR_CASE);
  const goals = [
    goal({
      what: 'executor execute() fixed cost (ns per call)',
      atMost: EXECUTOR_GOAL_NS,
      achieved: executor?.nsPerOp?.median ?? null,
      unavailable: executor?.skipped,
      note: executor?.nsPerOp
        ? `over ${executor.runs} process(es): ${executor.nsPerOp.min}–${executor.nsPerOp.max} ns`
        : undefined,
    }),
    ...PICK_CASES.map((name) => {
      const c = cases.find((x) => x.name === name);
      return goal({
        what: `${name} (ns per pick)`,
        atMost: PICK_GOAL_NS,
        achieved: c?.nsPerOp?.median ?? null,
        unavailable: c?.skipped,
        note: c?.nsPerOp ? `over ${c.runs} process(es): ${c.nsPerOp.min}–${c.nsPerOp.max} ns` : undefined,
      });
    }),
  ];
  // O(1): the pick over 100 instances costs what it costs over 3 (ratio of the medians, one run).
  const [few, many] = PICK_CASES.map((name) => cases.find((x) => x.name === name)?.nsPerOp?.median);
  if (few !== undefined && many !== undefined)
    goals.push(
      goal({
        what: 'pick cost, 100 instances ÷ 3 instances (×)',
        atMost: 1.5,
        achieved: round(many / few, 2),
        note: `${many} ns ÷ ${few} ns`,
      }),
    );
  return { settings: { runs, batchMs, batches }, cases, goals };
}
