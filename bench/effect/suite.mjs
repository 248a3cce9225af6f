import { fileURLToPath } from 'node:url';
import { runChild } from '../lib/child.mjs';
import { round, summarize } from '../lib/stats.mjs';

/**
 * Effectiveness: what prazo exists for, in simulated incidents on the fake clock (deterministic per
 * seed; several seeds give median and min–max where randomness is involved).
 */
const RUN = fileURLToPath(new URL('./run-effect.mjs', import.meta.url));
/** The Google SRE book's figure for a 10% retry budget under total outage. */
export const AMPLIFICATION_GOAL = 1.1;
/**
 * Hedging must cut the caller's p99 at least in half on this dependency: the tail above p95 is 10× the
 * body, so a hedge sent at the p95 should bring p99 down to about p95 + one fast answer.
 */
export const HEDGE_P99_GOAL = 0.5;
/**
 * Issue 15: over three instances, one slow (10×) on 5% of its answers, picking plus hedging cut the
 * caller's p99 by 80% at least (≤ 0.2 of round robin's) for at most 5% extra requests.
 */
export const INSTANCES_P99_GOAL = 0.2;
export const INSTANCES_EXTRA_GOAL = 0.05;

export async function runEffectSuite({ runs, outageSeconds, rps, hedgeRequests, log }) {
  const amp = await runChild(
    RUN,
    ['--scenario', 'amplification', '--outage-seconds', String(outageSeconds), '--rps', String(rps)],
    { timeoutMs: 120_000 },
  );
  log('  amplification done');
  const hedges = [];
  for (let seed = 1; seed <= runs; seed += 1) {
    hedges.push(
      await runChild(
        RUN,
        ['--scenario', 'hedging', '--seed', String(seed), '--requests', String(hedgeRequests)],
        {
          timeoutMs: 120_000,
        },
      ),
    );
    log(`  hedging seed ${seed}/${runs} done`);
  }
  const picks = [];
  for (let seed = 1; seed <= runs; seed += 1) {
    picks.push(
      await runChild(
        RUN,
        ['--scenario', 'instances', '--seed', String(seed), '--requests', String(hedgeRequests)],
        { timeoutMs: 120_000 },
      ),
    );
    log(`  instances seed ${seed}/${runs} done`);
  }
  const sections = [amplificationSection(amp), hedgingSection(hedges), instancesSection(picks)];
  return {
    settings: { runs, outageSeconds, rps, hedgeRequests },
    amplification: amp,
    hedging: hedges,
    instances: picks,
    sections,
    goals: [...goals(amp, hedges), ...instancesGoals(picks)],
  };
}

function amplificationSection(amp) {
  const section = {
    title: 'Effectiveness: load amplification under a total outage',
    setup:
      `Fake clock, ${amp.rps} req/s, 10 s healthy then ${amp.outageSeconds} s where every attempt fails (503); ` +
      `${amp.attemptsPerRequest} attempts per request. Amplification = attempts reaching the dependency ÷ original requests during the outage (SRE book: 3× naive → 1.1× with a 10% budget).`,
    columns: [
      'client',
      'original requests',
      'attempts at dependency',
      'amplification',
      'in the first second',
    ],
    rows: [],
  };
  if (amp.skipped) return { ...section, skipped: amp.skipped };
  const r = (name, v) =>
    v.skipped
      ? [name, 'skipped', v.skipped, '', '']
      : [
          name,
          v.originals,
          v.attempts,
          `${round(v.amplification, 3)}×`,
          `${round(v.firstSecondAmplification, 2)}×`,
        ];
  section.rows.push(r(`naive (${amp.attemptsPerRequest} attempts, no budget)`, amp.naive));
  section.rows.push(r('prazo execute() + retry budget, throttle off', amp.prazo));
  if (amp.throttled) section.rows.push(r('prazo execute(), defaults (+ adaptive throttle)', amp.throttled));
  return section;
}

function hedgingSection(hedges) {
  const first = hedges[0] ?? {};
  const section = {
    title: 'Effectiveness: tail latency with hedging',
    setup:
      `Fake clock, 200 req/s; each attempt 8–12 ms, ${Math.round((first.slowShare ?? 0.05) * 100)}% of attempts ${first.slowFactor ?? 10}× slower; ` +
      `${first.without?.requests ?? '?'} measured calls per seed, ${hedges.length} seed(s): median (min–max). Hedge at the live p95, paid from the retry budget.`,
    columns: [
      'client',
      'p50 ms',
      'p95 ms',
      'p99 ms',
      'p99.9 ms',
      'max ms',
      'extra requests',
      'budget refusals',
    ],
    rows: [],
  };
  const skipped = hedges.find((h) => h.skipped);
  if (skipped) return { ...section, skipped: skipped.skipped };
  for (const [label, key] of [
    ['without hedging', 'without'],
    ['hedge at live p95 (default)', 'with'],
    ['hedge at live p94', 'withP94'],
  ]) {
    const cell = (m, digits = 1) => {
      const s = summarize(hedges.map((h) => h[key][m]));
      return `${round(s.median, digits)} (${round(s.min, digits)}–${round(s.max, digits)})`;
    };
    const extra = summarize(hedges.map((h) => h[key].extraRequestsShare * 100));
    section.rows.push([
      label,
      cell('p50Ms'),
      cell('p95Ms'),
      cell('p99Ms'),
      cell('p999Ms'),
      cell('maxMs'),
      `${round(extra.median, 2)}% (${round(extra.min, 2)}–${round(extra.max, 2)})`,
      cell('budgetRefused', 0),
    ]);
  }
  return section;
}

function goals(amp, hedges) {
  const out = [];
  if (amp.prazo && !amp.prazo.skipped) {
    const achieved = round(amp.prazo.amplification, 3);
    out.push({
      what: 'load amplification under total outage with the retry budget (×)',
      goal: `≤ ${AMPLIFICATION_GOAL}`,
      achieved,
      met: achieved <= AMPLIFICATION_GOAL + 1e-9,
      shortBy: achieved > AMPLIFICATION_GOAL ? round(achieved - AMPLIFICATION_GOAL, 3) : 0,
    });
  }
  if (hedges.length > 0 && !hedges.some((h) => h.skipped)) {
    for (const [key, label] of [
      ['with', 'live p95, the default'],
      ['withP94', 'live p94'],
    ]) {
      const ratio = summarize(hedges.map((h) => h[key].p99Ms / h.without.p99Ms)).median;
      out.push({
        what: `hedging at the ${label}: caller p99 with ÷ without`,
        goal: `≤ ${HEDGE_P99_GOAL}`,
        achieved: round(ratio, 3),
        met: ratio <= HEDGE_P99_GOAL,
        shortBy: ratio <= HEDGE_P99_GOAL ? 0 : round(ratio - HEDGE_P99_GOAL, 3),
      });
    }
    const extra = summarize(hedges.map((h) => h.with.extraRequestsShare)).median;
    out.push({
      what: 'hedging at the live p95: extra requests (share of calls), within the 10% budget',
      goal: '≤ 0.1',
      achieved: round(extra, 4),
      met: extra <= 0.1,
      shortBy: extra <= 0.1 ? 0 : round(extra - 0.1, 4),
    });
  }
  return out;
}

const INSTANCE_VARIANTS = [
  ['round robin, no hedging', 'roundRobin'],
  ['picking (p2c over peak-EWMA), no hedging', 'picking'],
  ['round robin + hedge at the live p95', 'hedging'],
  ['picking + hedge at the live p95, to another instance', 'both'],
];

function instancesSection(picks) {
  const first = picks[0] ?? {};
  const section = {
    title: 'Effectiveness: three instances, one slow on some of its answers (picking and hedging)',
    setup:
      `Fake clock, 200 req/s; each instance answers in 8–12 ms, one of the three ${first.slowFactor ?? 10}× slower on ` +
      `${Math.round((first.slowShare ?? 0.05) * 100)}% of its answers; ${first.roundRobin?.requests ?? '?'} measured calls per seed, ` +
      `${picks.length} seed(s): median (min–max). "× round robin": the p99 divided by round robin's in the same seed.`,
    columns: [
      'client',
      'p50 ms',
      'p99 ms',
      'max ms',
      'p99 × round robin',
      'extra requests',
      'slow instance share',
    ],
    rows: [],
  };
  const skipped = picks.find((p) => p.skipped);
  if (skipped) return { ...section, skipped: skipped.skipped };
  for (const [label, key] of INSTANCE_VARIANTS) {
    const cell = (values, digits = 1, unit = '') => {
      const s = summarize(values);
      return `${round(s.median, digits)}${unit} (${round(s.min, digits)}–${round(s.max, digits)})`;
    };
    section.rows.push([
      label,
      cell(picks.map((p) => p[key].p50Ms)),
      cell(picks.map((p) => p[key].p99Ms)),
      cell(picks.map((p) => p[key].maxMs)),
      cell(
        picks.map((p) => p[key].p99Ms / p.roundRobin.p99Ms),
        3,
      ),
      cell(
        picks.map((p) => p[key].extraRequestsShare * 100),
        2,
        '%',
      ),
      cell(
        picks.map((p) => p[key].slowInstanceShare * 100),
        1,
        '%',
      ),
    ]);
  }
  return section;
}

function instancesGoals(picks) {
  if (picks.length === 0 || picks.some((p) => p.skipped)) return [];
  const out = [];
  for (const [key, label] of [
    ['both', 'picking + hedging'],
    ['picking', 'picking alone'],
  ]) {
    const ratio = summarize(picks.map((p) => p[key].p99Ms / p.roundRobin.p99Ms)).median;
    out.push({
      what: `three instances, one slow: ${label}, caller p99 ÷ round robin's`,
      goal: `≤ ${INSTANCES_P99_GOAL}`,
      achieved: round(ratio, 3),
      met: ratio <= INSTANCES_P99_GOAL,
      shortBy: ratio <= INSTANCES_P99_GOAL ? 0 : round(ratio - INSTANCES_P99_GOAL, 3),
    });
    const extra = summarize(picks.map((p) => p[key].extraRequestsShare)).median;
    out.push({
      what: `three instances, one slow: ${label}, extra requests (share of calls)`,
      goal: `≤ ${INSTANCES_EXTRA_GOAL}`,
      achieved: round(extra, 4),
      met: extra <= INSTANCES_EXTRA_GOAL,
      shortBy: extra <= INSTANCES_EXTRA_GOAL ? 0 : round(extra - INSTANCES_EXTRA_GOAL, 4),
    });
  }
  return out;
}
