import { fileURLToPath } from 'node:url';
import { runChild } from '../lib/child.mjs';
import { goal, rotate, round, summarize } from '../lib/stats.mjs';
import { MICRO_CASES } from './cases.mjs';

/** Every micro case in its own process, `runs` times, order rotated; median and min–max of the runs. */
const RUN_CASE = fileURLToPath(new URL('./run-case.mjs', import.meta.url));
/** Goal of issue 13: the executor's fixed cost per call (no I/O: a resolved operation), in ns. */
export const EXECUTOR_GOAL_NS = 300;
const EXECUTOR_CASE = 'executor execute() fixed cost';

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
  ];
  return { settings: { runs, batchMs, batches }, cases, goals };
}
