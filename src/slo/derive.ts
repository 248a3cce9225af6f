import { type CalibrateTimeoutInput, calibrateTimeout } from '../calibrate/timeout.js';
import { isInvalidOptions } from '../errors/guards.js';
import { InvalidOptionsError } from '../errors/options.js';
import { budgetShapeProblem, checkPath } from './parse.js';
import type { BudgetComponent, BudgetProblem, ComponentKind, LatencyBudget } from './types.js';

/**
 * Timeouts derived from the budget (SPEC B2): the budget is the single source of an endpoint's
 * timeouts. Each component's slice is its deadline; for a remote component calling a calibrated
 * dependency, the slice is the `userDeadlineMs` of `calibrateTimeout`, so the response timeout still
 * comes from the dependency's p99 and the slice decides how many attempts fit (SPEC C3). A slice too
 * small for even one attempt is reported: the budget is infeasible for that dependency.
 */

/** What a dependency brings to the derivation (its calibration inputs, minus the deadline). */
export type DependencyProfile = Omit<CalibrateTimeoutInput, 'userDeadlineMs'>;

export interface ComponentTimeouts {
  readonly name: string;
  readonly kind: ComponentKind;
  /** The component's deadline: its slice, in ms. Use `Deadline.slice(sliceMs)` on the request's deadline. */
  readonly sliceMs: number;
  readonly dependency?: string;
  /** For a remote component with a known dependency: the calibrated timeouts within the slice. */
  readonly connectMs?: number;
  readonly responseMs?: number;
  readonly attempts?: number;
  readonly warning: string | null;
}

export interface DerivedTimeouts {
  readonly endpoint: string;
  readonly components: readonly ComponentTimeouts[];
  readonly problems: readonly BudgetProblem[];
}

export function deriveTimeouts(
  budget: LatencyBudget,
  dependencies: ReadonlyMap<string, DependencyProfile> = new Map(),
  at: readonly (string | number)[] = [],
  /** Dependencies declared but invalid (their own errors are reported elsewhere): not derived, not "unknown". */
  invalid: ReadonlySet<string> = new Set(),
): DerivedTimeouts {
  const wrong = [
    budgetShapeProblem(budget),
    typeof (dependencies as Partial<ReadonlyMap<string, unknown>>)?.get === 'function'
      ? undefined
      : 'must be a Map of dependency name to its profile',
    typeof (invalid as Partial<ReadonlySet<string>>)?.has === 'function'
      ? undefined
      : 'must be a Set of dependency names',
  ];
  const named = ['budget', 'dependencies', 'invalid'];
  const shape = wrong.flatMap((p, i) => (p === undefined ? [] : [`${named[i]} ${p}`]));
  if (shape.length > 0) throw new InvalidOptionsError('deriveTimeouts', shape);
  checkPath('deriveTimeouts', at);
  const problems: BudgetProblem[] = [];
  const components = budget.components.map((c, i) => {
    const path = [...at, 'components', i];
    return derive(c, dependencies, path, problems, invalid);
  });
  return Object.freeze({ endpoint: budget.endpoint, components: Object.freeze(components), problems });
}

function derive(
  c: BudgetComponent,
  dependencies: ReadonlyMap<string, DependencyProfile>,
  path: (string | number)[],
  problems: BudgetProblem[],
  invalid: ReadonlySet<string>,
): ComponentTimeouts {
  const base = { name: c.name, kind: c.kind, sliceMs: c.sliceMs };
  if (c.dependency === undefined) return Object.freeze({ ...base, warning: null });
  const profile = dependencies.get(c.dependency);
  if (profile === undefined && invalid.has(c.dependency)) {
    return Object.freeze({ ...base, dependency: c.dependency, warning: null });
  }
  if (profile === undefined) {
    problems.push({
      path: [...path, 'dependency'],
      message: `unknown dependency ${c.dependency} (not in dependencies)`,
      severity: 'error',
    });
    return Object.freeze({ ...base, dependency: c.dependency, warning: null });
  }
  try {
    const t = calibrateTimeout({ ...profile, userDeadlineMs: c.sliceMs });
    const warning = t.warning === null ? null : `${c.name} → ${c.dependency}: ${t.warning}`;
    if (warning !== null) {
      problems.push({
        path: [...path, 'slice_ms'],
        message: warning,
        severity: t.feasible ? 'warning' : 'error',
      });
    }
    const { connectMs, responseMs, attempts } = t;
    return Object.freeze({ ...base, dependency: c.dependency, connectMs, responseMs, attempts, warning });
  } catch (error) {
    if (!isInvalidOptions(error)) throw error;
    const message = `cannot calibrate ${c.dependency}: ${error.problems.join('; ')}`;
    problems.push({ path: [...path, 'dependency'], message, severity: 'error' });
    return Object.freeze({ ...base, dependency: c.dependency, warning: message });
  }
}
