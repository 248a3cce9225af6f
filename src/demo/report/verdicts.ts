import type { DemoResult } from '../run/demo.js';
import type { StackName } from '../types.js';
import { ms, pct, times } from './format.js';
import type { StackMetrics } from './summary.js';

/**
 * The seed's claims, checked against a run's numbers. Each verdict says what was measured, whether
 * the claim held, and never hides a claim that did not: the demo's job is to show the seed's claims
 * or honestly where they do not hold.
 */
export interface Verdict {
  readonly id:
    | 'amplification'
    | 'wasted-work'
    | 'independent-route'
    | 'tail'
    | 'instance-down'
    | 'instance-503'
    | 'healthy'
    | 'hung-fails-fast'
    | 'overload-hung'
    | 'overload-down'
    | 'overload-slow'
    | 'slow-within-deadline'
    | 'recover';
  readonly holds: boolean;
  readonly text: string;
}

type Pick = (scenario: string, stack: StackName) => StackMetrics | undefined;

export function verdicts(result: DemoResult): Verdict[] {
  const get: Pick = (scenario, stack) =>
    result.scenarios.find((s) => s.name === scenario)?.stacks.find((m) => m.stack === stack);
  const out: Verdict[] = [];
  const push = (v: Verdict | undefined): void => {
    if (v !== undefined) out.push(v);
  };
  push(amplification(get));
  push(wasted(get));
  push(independent(result));
  push(tail(get));
  push(badInstance(get, 'instance-down', 'one instance down (connections refused)'));
  push(badInstance(get, 'instance-503', 'one instance answering 503 on half its calls'));
  push(healthy(get));
  push(hungFailsFast(get));
  push(overload(get, 'overload-hung', 'supplier hung at 5× the checkouts'));
  push(overload(get, 'overload-down', 'supplier down (refused) at 5× the checkouts'));
  push(overload(get, 'overload-slow', 'supplier slow at 5× the checkouts'));
  push(slowWithinDeadline(get));
  push(recover(get));
  return out;
}

function amplification(get: Pick): Verdict | undefined {
  const naive = get('down', 'naive')?.supplier.amplification;
  const prazo = get('down', 'prazo')?.supplier.amplification;
  if (naive === undefined || prazo === undefined) return undefined;
  const holds = prazo <= 1.1 && naive >= 2 * prazo;
  return {
    id: 'amplification',
    holds,
    text: `supplier down: naive sent ${times(naive)} the user requests to the supplier (retries at every hop), prazo ${times(prazo)} (seed: ≤ 1.10× with a retry budget)`,
  };
}

function wasted(get: Pick): Verdict | undefined {
  const scenario = ['hung', 'slow', 'down'].find((s) => get(s, 'naive') && get(s, 'prazo'));
  if (scenario === undefined) return undefined;
  const naive = get(scenario, 'naive')!.wasted;
  const prazo = get(scenario, 'prazo')!.wasted;
  const holds = naive.ms > 0 && prazo.ms <= 0.1 * naive.ms;
  const bound = naive.stillRunning > 0 ? ' (at least: some was still running)' : '';
  return {
    id: 'wasted-work',
    holds,
    text: `supplier ${scenario}: work done after the user gave up, naive ${ms(naive.ms)}${bound}, prazo ${ms(prazo.ms)} (the deadline travels, work stops)`,
  };
}

function independent(result: DemoResult): Verdict | undefined {
  const prazo = result.scenarios.flatMap((s) =>
    s.stacks.filter((m) => m.stack === 'prazo').map((m) => ({ s, m })),
  );
  if (prazo.length === 0) return undefined;
  const worst = prazo.reduce((a, b) =>
    (b.m.catalog.successPct ?? 100) < (a.m.catalog.successPct ?? 100) ? b : a,
  );
  const naiveWorst = Math.min(
    ...result.scenarios.flatMap((s) =>
      s.stacks.filter((m) => m.stack === 'naive').map((m) => m.catalog.successPct ?? 100),
    ),
  );
  const holds = (worst.m.catalog.successPct ?? 0) >= 99.9;
  const naive = Number.isFinite(naiveWorst) ? `; naive's fell to ${pct(naiveWorst)}` : '';
  return {
    id: 'independent-route',
    holds,
    text:
      (worst.m.catalog.successPct === 100
        ? 'the catalog (never uses the supplier) answered 100% under prazo in every scenario'
        : `the catalog (never uses the supplier) under prazo: ${pct(worst.m.catalog.successPct)} answered in its worst scenario (${worst.s.name})`) +
      `${naive}${holds ? ': the pool it shares did not run dry' : ''}`,
  };
}

/**
 * Issue 15's bars for the incidents of one bad instance among several (SPEC X5): what prazo must do,
 * each with the number it is checked against. Naive is shown beside it, whether it fell or not.
 */
export const INSTANCE_BARS = Object.freeze({
  /** "One slow instance": answers within the user's deadline, % of checkouts. */
  tailWithinDeadlinePct: 99.5,
  /** "One slow instance": the user's p99 at most this multiple of the healthy scenario's. */
  tailP99VsHealthy: 1.3,
  /** "One slow instance": requests to the supplier per checkout, at most. */
  tailLoad: 1.05,
  /** "One instance down" and "one instance answering 503 on half its calls": within the deadline, %. */
  badInstanceWithinDeadlinePct: 99,
});

const mark = (ok: boolean): string => (ok ? '✓' : '✗');

function tail(get: Pick): Verdict | undefined {
  const prazo = get('tail', 'prazo');
  if (prazo === undefined) return undefined;
  const within = prazo.checkout.withinDeadlinePct;
  const p99 = prazo.checkout.p99Ms;
  const load = prazo.supplier.amplification;
  const healthyP99 = get('healthy', 'prazo')?.checkout.p99Ms;
  const ratio =
    p99 !== undefined && healthyP99 !== undefined && healthyP99 > 0 ? p99 / healthyP99 : undefined;
  const okWithin = within !== undefined && within >= INSTANCE_BARS.tailWithinDeadlinePct;
  const okLoad = load !== undefined && load <= INSTANCE_BARS.tailLoad;
  // Without the healthy scenario in the run there is nothing to compare the p99 with: not judged.
  const okP99 = ratio === undefined || ratio <= INSTANCE_BARS.tailP99VsHealthy;
  const p99Text =
    ratio === undefined
      ? `user p99 ${ms(p99)} (run "healthy" too to compare it)`
      : `user p99 ${ms(p99)} = ${times(ratio)} the healthy scenario's ${mark(okP99)} (≤ ${times(INSTANCE_BARS.tailP99VsHealthy)})`;
  const naive = get('tail', 'naive');
  const naiveText =
    naive === undefined
      ? ''
      : `; naive ${pct(naive.checkout.withinDeadlinePct)} within the deadline, p99 ${ms(naive.checkout.p99Ms)}`;
  return {
    id: 'tail',
    holds: okWithin && okP99 && okLoad,
    text:
      `one slow instance: prazo ${pct(within)} within the deadline ${mark(okWithin)} (≥ ${pct(INSTANCE_BARS.tailWithinDeadlinePct)}), ` +
      `${p99Text}, supplier load ${times(load)} ${mark(okLoad)} (≤ ${times(INSTANCE_BARS.tailLoad)})${naiveText}`,
  };
}

/**
 * One instance of several refusing or failing: prazo must answer ≥ 99% within the deadline; naive is
 * said to fall when it answers fewer within the deadline than prazo's bar, and said not to (with its
 * load: what it pays instead) when it does not.
 */
function badInstance(
  get: Pick,
  scenario: 'instance-down' | 'instance-503',
  title: string,
): Verdict | undefined {
  const prazo = get(scenario, 'prazo');
  if (prazo === undefined) return undefined;
  const bar = INSTANCE_BARS.badInstanceWithinDeadlinePct;
  const within = prazo.checkout.withinDeadlinePct;
  const holds = within !== undefined && within >= bar;
  const prazoText = `prazo ${pct(within)} within the deadline (≥ ${pct(bar)}) at ${times(prazo.supplier.amplification)} the supplier load`;
  const naive = get(scenario, 'naive');
  let naiveText = '';
  if (naive !== undefined) {
    const n = naive.checkout.withinDeadlinePct;
    const fell = n === undefined || n < bar;
    naiveText = fell
      ? `; naive fell: ${pct(n)} within the deadline, at ${times(naive.supplier.amplification)} the load`
      : `; naive did not fall: ${pct(n)} within the deadline, paid with ${times(naive.supplier.amplification)} the load (its retries find a good instance)`;
  }
  return { id: scenario, holds, text: `${title}: ${prazoText}${naiveText}` };
}

function healthy(get: Pick): Verdict | undefined {
  const prazo = get('healthy', 'prazo')?.checkout.withinDeadlinePct;
  const naive = get('healthy', 'naive')?.checkout.withinDeadlinePct;
  if (prazo === undefined) return undefined;
  return {
    id: 'healthy',
    holds: prazo >= 99,
    text: `healthy: answers within the deadline, prazo ${pct(prazo)}${naive === undefined ? '' : `, naive ${pct(naive)}`} (timeouts above the measured p99 do not cut healthy traffic)`,
  };
}

/**
 * Issue 23's bars: the service under incident fails fast, keeps its independent routes answering
 * and adds no load to what is down, at five times the checkout rate too; a slow supplier's answers
 * that arrive in time are delivered; recovery is measured.
 */
export const OVERLOAD_BARS = Object.freeze({
  /** The catalog's success under an incident, %. */
  catalogOkPct: 99.9,
  /** The catalog's p99 at most this multiple of the healthy scenario's (the same run's prazo catalog). */
  catalogP99VsHealthy: 2,
  /** The median wait of a failed checkout, ms. */
  failedP50Ms: 20,
  /** Requests to the supplier per checkout, at most. */
  supplierLoad: 1.1,
  /** `recover`: from the supplier's return to checkouts ≥ 99% within the deadline, ms. */
  recoveryMs: 3_000,
  /** `recover`: requests to the supplier per checkout meanwhile, at most. */
  recoveryLoad: 1.1,
});

const B = OVERLOAD_BARS;

/**
 * The catalog's p99 against a healthy baseline of the same run, judged only when one ran: for the
 * 5× scenarios the healthy supplier at the same rate (`overload-healthy`) when it ran, else `healthy`.
 */
function catalogVsHealthy(
  get: Pick,
  m: StackMetrics,
  baselines: readonly string[] = ['healthy'],
): { ok: boolean; text: string } {
  const p99 = m.catalog.p99Ms;
  const name = baselines.find((b) => (get(b, m.stack)?.catalog.p99Ms ?? 0) > 0);
  const healthyP99 = name === undefined ? undefined : get(name, m.stack)!.catalog.p99Ms!;
  if (p99 === undefined || name === undefined || healthyP99 === undefined)
    return { ok: true, text: `catalog p99 ${ms(p99)} (run "${baselines.at(-1)}" too to compare it)` };
  const ratio = p99 / healthyP99;
  const ok = ratio <= B.catalogP99VsHealthy;
  const scenario = name === 'healthy' ? 'the healthy scenario' : `"${name}"`;
  return {
    ok,
    text: `catalog p99 ${ms(p99)} = ${times(ratio)} ${scenario}'s ${ms(healthyP99)} ${mark(ok)} (≤ ${times(B.catalogP99VsHealthy)})`,
  };
}

/** A failed checkout's median wait; none failed is "fails fast" vacuously. */
function failsFast(m: StackMetrics): { ok: boolean; text: string } {
  const p50 = m.checkout.failedP50Ms;
  const ok = p50 === undefined || p50 <= B.failedP50Ms;
  return {
    ok,
    text:
      p50 === undefined
        ? 'no checkout failed'
        : `failed checkouts p50 ${ms(p50)} ${mark(ok)} (≤ ${ms(B.failedP50Ms)})`,
  };
}

function hungFailsFast(get: Pick): Verdict | undefined {
  const prazo = get('hung', 'prazo');
  if (prazo === undefined) return undefined;
  const fast = failsFast(prazo);
  const naive = get('hung', 'naive')?.checkout.failedP50Ms;
  return {
    id: 'hung-fails-fast',
    holds: fast.ok,
    text: `supplier hung: prazo's ${fast.text}${naive === undefined ? '' : `; naive's ${ms(naive)}`} (a call the dependency cannot answer fails at once, not after its timeout)`,
  };
}

/**
 * `overload-hung`, `overload-down`, `overload-slow`: at five times the checkout rate, prazo's catalog ≥ 99.9% ok with
 * its p99 ≤ 2× the healthy scenario's, the gateway pool never full, failed checkouts fast, the
 * supplier load ≤ 1.1×. Naive's catalog and pool are shown beside it.
 */
function overload(
  get: Pick,
  scenario: 'overload-hung' | 'overload-down' | 'overload-slow',
  title: string,
): Verdict | undefined {
  const prazo = get(scenario, 'prazo');
  if (prazo === undefined) return undefined;
  const ok = prazo.catalog.successPct;
  const okCatalog = ok !== undefined && ok >= B.catalogOkPct;
  const p99 = catalogVsHealthy(get, prazo, ['overload-healthy', 'healthy']);
  const pool = prazo.pool;
  const okPool = pool.connections > 0 && pool.maxBusy < pool.connections;
  const fast = failsFast(prazo);
  const load = prazo.supplier.amplification;
  const okLoad = load !== undefined && load <= B.supplierLoad;
  const naive = get(scenario, 'naive');
  const naiveText =
    naive === undefined
      ? ''
      : `; naive: catalog ${pct(naive.catalog.successPct)}, p99 ${ms(naive.catalog.p99Ms)}, pool ${naive.pool.maxBusy}/${naive.pool.connections}`;
  return {
    id: scenario,
    holds: okCatalog && p99.ok && okPool && fast.ok && okLoad,
    text:
      `${title}: prazo's catalog ${pct(ok)} ok ${mark(okCatalog)} (≥ ${pct(B.catalogOkPct)}), ${p99.text}, ` +
      `gateway pool ${pool.maxBusy}/${pool.connections} at most ${mark(okPool)} (< ${pool.connections}), ${fast.text}, ` +
      `supplier load ${times(load)} ${mark(okLoad)} (≤ ${times(B.supplierLoad)})${naiveText}`,
  };
}

/**
 * `slow` at the demo's rate: the supplier answers in ~1.5 s, inside the user's 2 s. prazo must answer
 * at least as many checkouts within the deadline as naive in the same run (capacity-aware waiting),
 * its catalog p99 within 2× the healthy scenario's.
 */
function slowWithinDeadline(get: Pick): Verdict | undefined {
  const prazo = get('slow', 'prazo');
  const naive = get('slow', 'naive');
  if (prazo === undefined || naive === undefined) return undefined;
  const p = prazo.checkout.withinDeadlinePct;
  const n = naive.checkout.withinDeadlinePct;
  const okWithin = p !== undefined && (n === undefined || p >= n);
  const p99 = catalogVsHealthy(get, prazo);
  return {
    id: 'slow-within-deadline',
    holds: okWithin && p99.ok,
    text:
      `supplier slow (answers in ~1.5 s): prazo answered ${pct(p)} of checkouts within the deadline ${mark(okWithin)} (≥ naive's ${pct(n)}), ` +
      `${p99.text}; naive's catalog ${pct(naive.catalog.successPct)}, p99 ${ms(naive.catalog.p99Ms)}`,
  };
}

/** `recover`: prazo's checkouts ≥ 99% within the deadline ≤ 3 s after the supplier's return, at ≤ 1.1× the load. */
function recover(get: Pick): Verdict | undefined {
  const prazo = get('recover', 'prazo')?.recovery;
  if (prazo === undefined) return undefined;
  const { recoveryMs, load } = prazo;
  const okTime = recoveryMs !== undefined && recoveryMs <= B.recoveryMs;
  const okLoad = load !== undefined && load <= B.recoveryLoad;
  const naive = get('recover', 'naive')?.recovery;
  const naiveText =
    naive === undefined
      ? ''
      : naive.recoveryMs === undefined
        ? '; naive: not recovered before the load ended'
        : `; naive: ${ms(naive.recoveryMs)} at ${times(naive.load)} the load`;
  return {
    id: 'recover',
    holds: okTime && okLoad,
    text:
      `supplier back after an outage: prazo's checkouts ≥ 99% within the deadline ` +
      (recoveryMs === undefined
        ? `not again before the load ended ${mark(false)}`
        : `${ms(recoveryMs)} after its return ${mark(okTime)} (≤ ${ms(B.recoveryMs)})`) +
      `, supplier load meanwhile ${times(load)} ${mark(okLoad)} (≤ ${times(B.recoveryLoad)})${naiveText}`,
  };
}
