import { fileURLToPath } from 'node:url';
import { runChild } from '../lib/child.mjs';
import { rotate, round, summarize } from '../lib/stats.mjs';

/**
 * Memory of one retry budget: the seed's array of timestamps against prazo's bucketed window, after a
 * full 10 s window at each event rate, each measurement in its own `--expose-gc` process. The seed's
 * design grows with the rate; prazo's must not (goal: constant, a few KB).
 */
const RUN = fileURLToPath(new URL('./run-memory.mjs', import.meta.url));
export const MEMORY_GOAL_BYTES = 8 * 1024;

export async function runMemorySuite({ runs, rates, windowMs, steadyMs, prazoCopies, log }) {
  const designs = ['seed', 'prazo'];
  const raw = {};
  const skipped = {};
  for (let r = 0; r < runs; r += 1) {
    for (const design of rotate(designs, r)) {
      for (const rate of rates) {
        if (skipped[design]) continue;
        // Enough copies that the retained total rises well above GC noise (~100 KiB).
        const copies = design === 'prazo' ? prazoCopies : rate >= 100_000 ? 1 : 10;
        const out = await runChild(
          RUN,
          [
            ...['--design', design, '--rate', String(rate), '--window-ms', String(windowMs)],
            ...['--steady-ms', String(steadyMs), '--copies', String(copies)],
          ],
          { nodeArgs: ['--expose-gc'], timeoutMs: 120_000 },
        );
        if (out.skipped) {
          skipped[design] = out.skipped;
          continue;
        }
        const key = `${design}@${rate}`;
        raw[key] ??= [];
        raw[key].push(out);
      }
    }
    log(`  memory round ${r + 1}/${runs} done`);
  }
  const rows = [];
  for (const design of designs) {
    if (skipped[design]) {
      rows.push({ design, skipped: skipped[design] });
      continue;
    }
    for (const rate of rates) {
      const outs = raw[`${design}@${rate}`] ?? [];
      const bytes = summarize(outs.map((o) => o.retainedBytes));
      const ns = summarize(outs.map((o) => o.nsPerEvent));
      rows.push({
        design,
        eventsPerSecond: rate,
        windowMs: outs[0]?.windowMs ?? null,
        eventsInWindow: outs[0]?.eventsPerWindow ?? null,
        retainedBytes: { median: round(bytes.median, 0), min: round(bytes.min, 0), max: round(bytes.max, 0) },
        steadyNsPerEvent: { median: round(ns.median, 1), min: round(ns.min, 1), max: round(ns.max, 1) },
        runs: outs.length,
      });
    }
  }
  const goals = [];
  const top = rows.find((r) => r.design === 'prazo' && r.eventsPerSecond === Math.max(...rates));
  if (top && !top.skipped) {
    const achieved = top.retainedBytes.median;
    goals.push({
      what: `prazo budget memory at ${top.eventsPerSecond} events/s over ${top.windowMs} ms (bytes)`,
      goal: `≤ ${MEMORY_GOAL_BYTES}`,
      achieved,
      met: achieved !== null && achieved <= MEMORY_GOAL_BYTES,
      shortBy: achieved !== null && achieved > MEMORY_GOAL_BYTES ? achieved - MEMORY_GOAL_BYTES : 0,
    });
  }
  return { settings: { runs, rates, windowMs, steadyMs, prazoCopies }, rows, goals };
}
