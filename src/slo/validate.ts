import { InvalidOptionsError } from '../errors/options.js';
import { budgetShapeProblem, checkPath } from './parse.js';
import type { BudgetProblem, LatencyBudget } from './types.js';

/**
 * The budget's own arithmetic (SPEC B1): the slices must add up to the SLO — over it, the endpoint
 * promises what its parts cannot keep; under it, unallocated time nobody can use — and long-tail
 * (remote) components must get larger slices than deterministic (local) ones, because the margin is
 * never spread evenly: it goes where the tail is. `path` points at the raw input as in `parseBudget`.
 */
export function validateBudget(
  budget: LatencyBudget,
  at: readonly (string | number)[] = [],
): BudgetProblem[] {
  const shape = budgetShapeProblem(budget);
  if (shape !== undefined) throw new InvalidOptionsError('validateBudget', [`budget ${shape}`]);
  checkPath('validateBudget', at);
  const problems: BudgetProblem[] = [];
  const sum = budget.components.reduce((acc, c) => acc + c.sliceMs, 0);
  const names = budget.components.map((c) => `${c.name} ${c.sliceMs}`).join(' + ');
  const off = Math.abs(sum - budget.totalSloMs);
  // Slices written in decimal do not add up exactly in binary: 63 × 56249.9 + 56256.29 misses
  // 3599999.99 by 4.7e-9. Each slice's rounding and each addition err by up to one ulp of the total.
  const tolerance = Math.max(1e-9, (budget.components.length + 1) * 4 * Number.EPSILON * budget.totalSloMs);
  if (off > tolerance) {
    const how = sum > budget.totalSloMs ? 'exceed' : 'fall short of';
    problems.push({
      path: [...at, 'components'],
      message: `slices ${how} total_slo_ms by ${round(off) > 0 ? round(off) : Number(off.toPrecision(3))} ms: ${names} = ${round(sum)}, SLO ${budget.totalSloMs}`,
      severity: 'error',
    });
  }
  const remote = budget.components.filter((c) => c.kind === 'remote');
  const local = budget.components.filter((c) => c.kind === 'local');
  if (remote.length > 0 && local.length > 0) {
    const smallestRemote = remote.reduce((a, b) => (b.sliceMs < a.sliceMs ? b : a));
    const largestLocal = local.reduce((a, b) => (b.sliceMs > a.sliceMs ? b : a));
    if (smallestRemote.sliceMs <= largestLocal.sliceMs) {
      const index = budget.components.indexOf(smallestRemote);
      problems.push({
        path: [...at, 'components', index, 'slice_ms'],
        message:
          `remote (long-tail) component ${smallestRemote.name} gets ${smallestRemote.sliceMs} ms, not more than ` +
          `local (deterministic) ${largestLocal.name} with ${largestLocal.sliceMs} ms: give the tail the margin`,
        severity: 'warning',
      });
    }
  }
  return problems;
}

const round = (ms: number): number => Math.round(ms * 1000) / 1000;
