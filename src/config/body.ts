import { type ResolvedHealthThresholds, resolveHealthThresholds } from '../calibrate/health.js';
import type { IncomingDeadlineOptions } from '../deadline/headers.js';
import type { OptionsOf } from '../options/declare.js';
import { isOptionsObject } from '../options/declare.js';
import { OptionsValidator } from '../options/validator.js';
import { type DependencyProfile, type DerivedTimeouts, deriveTimeouts } from '../slo/derive.js';
import { parseBudget } from '../slo/parse.js';
import type { LatencyBudget } from '../slo/types.js';
import { validateBudget } from '../slo/validate.js';
import { type DependencyConfig, type ReadText, readDependency } from './dependency.js';
import type { RawProblem } from './problem.js';
import { CONFIG_FILE, type MESH_DEFAULTS_IN_FILE } from './schema.js';

/** An endpoint's latency budget (SPEC B1) and the timeouts derived from it (SPEC B2). */
export interface EndpointConfig {
  readonly budget: LatencyBudget;
  readonly timeouts: DerivedTimeouts;
}

/**
 * `service: { name, defaultMs, maxMs, clockSkewMs }`: how this service treats incoming deadlines
 * (SPEC D2, D3, D8): the options of `createDeadlineReader` and the server integrations.
 */
export interface ServiceConfig extends IncomingDeadlineOptions {
  readonly name?: string;
}

/** The top-level `mesh:`: defaults for the dependencies' placement in the cluster (`prazo export`). */
export type MeshDefaults = OptionsOf<typeof MESH_DEFAULTS_IN_FILE>;

export interface ConfigBody {
  readonly service: ServiceConfig | undefined;
  /** The top-level `mesh:` as given, or undefined. */
  readonly mesh?: MeshDefaults;
  /** The healthy-window guard's thresholds (`calibration:`, defaults applied). */
  readonly calibration?: ResolvedHealthThresholds;
  readonly dependencies: ReadonlyMap<string, DependencyConfig>;
  readonly endpoints: ReadonlyMap<string, EndpointConfig>;
}

/** The file's content, section by section; problems are appended to `problems`. */
export function readBody(data: unknown, problems: RawProblem[], readText: ReadText): ConfigBody | undefined {
  if (!isOptionsObject(data)) {
    problems.push({
      path: [],
      message: 'the file must hold a mapping with `dependencies` (and `service`, `endpoints`)',
      severity: 'error',
    });
    return undefined;
  }
  const v = new OptionsValidator('config', 'data');
  const top = v.read(CONFIG_FILE, data);
  const thresholds =
    top.calibration !== undefined && v.issues.every((i) => i.path[0] !== 'calibration')
      ? resolveHealthThresholds(top.calibration)
      : resolveHealthThresholds();
  const dependencies = readDependencies(v, problems, top.dependencies ?? [], readText, thresholds);
  const endpoints = readEndpoints(problems, top.endpoints ?? [], data, dependencies);
  for (const issue of v.issues) {
    const message = issue.unknown ? `unknown key${issue.message}` : issue.message;
    problems.push({ path: issue.path, message, severity: 'error' });
  }
  const service =
    top.service === undefined ? undefined : (Object.freeze({ ...top.service }) as ServiceConfig);
  const mesh = top.mesh === undefined ? {} : { mesh: Object.freeze({ ...top.mesh }) as MeshDefaults };
  return { service, dependencies, endpoints, ...mesh, calibration: thresholds };
}

function readDependencies(
  v: OptionsValidator,
  warnings: RawProblem[],
  entries: readonly unknown[],
  readText: ReadText,
  thresholds: ResolvedHealthThresholds,
): Map<string, DependencyConfig> {
  const out = new Map<string, DependencyConfig>();
  // Names as written, valid entries or not: a duplicate is said in the same pass as the entries'
  // other problems, not only once they are fixed (issue 27).
  const names = new Set<string>();
  for (const [i, entry] of entries.entries()) {
    const at = ['dependencies', i];
    if (!isOptionsObject(entry)) {
      v.problem('a dependency must be a mapping with at least `name` and `p99Ms` (or `kind`)', at);
      continue;
    }
    const name = typeof entry.name === 'string' ? entry.name.trim() : undefined;
    const duplicate = name !== undefined && name !== '' && names.has(name);
    if (duplicate) v.problem(`duplicate dependency ${name}`, [...at, 'name']);
    else if (name !== undefined) names.add(name);
    const dep = readDependency(v, warnings, entry, at, readText, thresholds);
    if (dep !== undefined && !duplicate) out.set(dep.options.name, dep);
  }
  return out;
}

function readEndpoints(
  problems: RawProblem[],
  entries: readonly unknown[],
  data: Record<string, unknown>,
  dependencies: ReadonlyMap<string, DependencyConfig>,
): Map<string, EndpointConfig> {
  const profiles = new Map<string, DependencyProfile>();
  for (const [name, d] of dependencies) {
    const { p99Ms, attempts, slack, forceSlack, connectCapMs, overheadMs } = d.options;
    profiles.set(name, { p99Ms, attempts, slack, forceSlack, connectCapMs, overheadMs });
  }
  // Named in the file but dropped for their own errors: an endpoint naming one is not "unknown".
  const invalid = new Set<string>();
  const declared = Array.isArray(data.dependencies) ? data.dependencies : [];
  for (const entry of declared) {
    const name = isOptionsObject(entry) ? entry.name : undefined;
    if (typeof name === 'string' && !dependencies.has(name.trim())) invalid.add(name.trim());
  }
  const out = new Map<string, EndpointConfig>();
  for (const [i, entry] of entries.entries()) {
    const at = ['endpoints', i];
    const parsed = parseBudget(entry, at);
    problems.push(...parsed.problems);
    if (parsed.budget === undefined) continue;
    const budget = parsed.budget;
    problems.push(...validateBudget(budget, at));
    const timeouts = deriveTimeouts(budget, profiles, at, invalid);
    problems.push(...timeouts.problems);
    if (out.has(budget.endpoint)) {
      problems.push({
        path: [...at, 'endpoint'],
        message: `duplicate endpoint ${budget.endpoint}`,
        severity: 'error',
      });
    } else out.set(budget.endpoint, Object.freeze({ budget, timeouts }));
  }
  return out;
}
