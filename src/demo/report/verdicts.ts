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
  readonly id: 'amplification' | 'wasted-work' | 'independent-route' | 'tail' | 'healthy';
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
  push(healthy(get));
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

function tail(get: Pick): Verdict | undefined {
  const naive = get('tail', 'naive')?.checkout.p99Ms;
  const prazo = get('tail', 'prazo')?.checkout.p99Ms;
  if (naive === undefined || prazo === undefined) return undefined;
  return {
    id: 'tail',
    holds: prazo < naive,
    text: `one slow instance: user p99 naive ${ms(naive)}, prazo ${ms(prazo)} (a hedge after the p95 goes to another instance)`,
  };
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
