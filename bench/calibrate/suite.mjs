import { fileURLToPath } from 'node:url';
import { runChild } from '../lib/child.mjs';
import { goal, round, summarize } from '../lib/stats.mjs';

/**
 * Fleet calibration (SPEC X8, #16): `prazo calibrate --prometheus` over many dependencies, a week at
 * one-hour sub-windows, against a Prometheus stand-in whose every range query takes a fixed time.
 * Measured side by side in one run: the default bounded concurrency (8 queries in flight) and one
 * query at a time, as a ratio; the goal is 200 dependencies within 10 s.
 */
const RUN = fileURLToPath(new URL('./run-fleet.mjs', import.meta.url));
export const FLEET_SECONDS_GOAL = 10;
export const FLEET_DEPENDENCIES = 200;

export async function runCalibrateSuite({ runs, dependencies, queryMs, log }) {
  const sides = { parallel: [], sequential: [] };
  for (let i = 0; i < runs; i += 1) {
    for (const [side, concurrency] of [
      ['parallel', 8],
      ['sequential', 1],
    ]) {
      sides[side].push(
        await runChild(
          RUN,
          [
            '--dependencies',
            String(dependencies),
            '--concurrency',
            String(concurrency),
            '--query-ms',
            String(queryMs),
          ],
          { timeoutMs: 180_000 },
        ),
      );
    }
    log(`  fleet calibration run ${i + 1}/${runs} done`);
  }
  const wall = (side) => summarize(sides[side].map((r) => r.wallMs));
  const speedup = summarize(sides.parallel.map((p, i) => sides.sequential[i].wallMs / p.wallMs));
  const cell = (s) => `${round(s.median, 0)} (${round(s.min, 0)}–${round(s.max, 0)})`;
  const section = {
    title: 'Fleet calibration: prazo calibrate --prometheus',
    setup:
      `${dependencies} dependencies, a 7-day window in 1-hour sub-windows (168 points × 18 series per dependency, 2 range queries each), ` +
      `against a Prometheus stand-in on loopback answering each query after ${queryMs} ms; ${runs} run(s): median (min–max) wall time of the whole command.`,
    columns: ['queries in flight', 'wall ms', 'queries', 'most in flight', 'speed-up'],
    rows: [
      [
        '8 (default)',
        cell(wall('parallel')),
        sides.parallel[0].queries,
        sides.parallel[0].maxInFlight,
        `${round(speedup.median, 2)}×`,
      ],
      [
        '1 (sequential)',
        cell(wall('sequential')),
        sides.sequential[0].queries,
        sides.sequential[0].maxInFlight,
        '1×',
      ],
    ],
  };
  // Per 200 dependencies: measured at 200 in a full run; a quick run's smaller fleet is scaled
  // linearly (the queries are independent, bounded in flight), and says so.
  const per200 = round((wall('parallel').median / 1000) * (FLEET_DEPENDENCIES / dependencies), 2);
  const goals = [
    goal({
      what: `calibrating ${FLEET_DEPENDENCIES} dependencies against Prometheus, wall time (s)`,
      atMost: FLEET_SECONDS_GOAL,
      achieved: per200,
      note:
        dependencies === FLEET_DEPENDENCIES
          ? `${dependencies} dependencies, 8 queries in flight`
          : `scaled from ${dependencies} dependencies (quick mode)`,
    }),
  ];
  return {
    settings: { runs, dependencies, queryMs },
    parallel: sides.parallel,
    sequential: sides.sequential,
    sections: [section],
    goals,
  };
}
