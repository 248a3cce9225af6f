import type { ResolvedHealthThresholds } from '../calibrate/health.js';
import { type DependencyProfile, type DerivedTimeouts, deriveTimeouts } from '../slo/derive.js';
import { parseBudget } from '../slo/parse.js';
import type { LatencyBudget } from '../slo/types.js';
import { validateBudget } from '../slo/validate.js';
import { CONFIG_LIMITS } from './constants.js';
import { type DependencyConfig, readDependency } from './dependency.js';
import { Fields, isRecord } from './fields.js';
import type { ReadText } from './histogram.js';
import type { RawProblem } from './problem.js';
import { readCalibration, readService, type ServiceConfig } from './sections.js';

/** An endpoint's latency budget (SPEC B1) and the timeouts derived from it (SPEC B2). */
export interface EndpointConfig {
  readonly budget: LatencyBudget;
  readonly timeouts: DerivedTimeouts;
}

export interface ConfigBody {
  readonly service: ServiceConfig | undefined;
  readonly dependencies: ReadonlyMap<string, DependencyConfig>;
  readonly endpoints: ReadonlyMap<string, EndpointConfig>;
}

const TOP = ['version', 'service', 'calibration', 'dependencies', 'endpoints'];

/** The file's content, section by section; problems are appended to `problems`. */
export function readBody(data: unknown, problems: RawProblem[], readText: ReadText): ConfigBody | undefined {
  const f = new Fields(problems);
  if (!isRecord(data)) {
    f.error([], 'the file must hold a mapping with `dependencies` (and `service`, `endpoints`)');
    return undefined;
  }
  f.unknownKeys(data, [], TOP);
  if (data.version !== undefined && data.version !== 1) f.error(['version'], 'must be 1');
  const service = readService(f, data);
  const thresholds = readCalibration(f, data);
  const dependencies = readDependencies(f, data, readText, thresholds);
  const endpoints = readEndpoints(f, data, dependencies);
  return { service, dependencies, endpoints };
}

function list(f: Fields, data: Record<string, unknown>, key: string, max: number): unknown[] {
  const v = data[key];
  if (v === undefined) return [];
  if (Array.isArray(v) && v.length <= max) return v;
  f.error([key], `must be a list of at most ${max} entries`);
  return [];
}

function readDependencies(
  f: Fields,
  data: Record<string, unknown>,
  readText: ReadText,
  thresholds: ResolvedHealthThresholds,
): Map<string, DependencyConfig> {
  const out = new Map<string, DependencyConfig>();
  for (const [i, entry] of list(f, data, 'dependencies', CONFIG_LIMITS.maxDependencies).entries()) {
    const at = ['dependencies', i];
    if (!isRecord(entry)) {
      f.error(at, 'a dependency must be a mapping with at least `name` and `p99Ms`');
      continue;
    }
    const dep = readDependency(f, entry, at, readText, thresholds);
    if (dep === undefined) continue;
    if (out.has(dep.options.name)) f.error([...at, 'name'], `duplicate dependency ${dep.options.name}`);
    else out.set(dep.options.name, dep);
  }
  return out;
}

function readEndpoints(
  f: Fields,
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
  const declared = Array.isArray(data['dependencies']) ? data['dependencies'] : [];
  for (const entry of declared) {
    const name = isRecord(entry) ? entry['name'] : undefined;
    if (typeof name === 'string' && !dependencies.has(name)) invalid.add(name);
  }
  const out = new Map<string, EndpointConfig>();
  for (const [i, entry] of list(f, data, 'endpoints', CONFIG_LIMITS.maxEndpoints).entries()) {
    const at = ['endpoints', i];
    const parsed = parseBudget(entry, at);
    f.problems.push(...parsed.problems);
    if (parsed.budget === undefined) continue;
    const budget = parsed.budget;
    f.problems.push(...validateBudget(budget, at));
    const timeouts = deriveTimeouts(budget, profiles, at, invalid);
    f.problems.push(...timeouts.problems);
    if (out.has(budget.endpoint)) f.error([...at, 'endpoint'], `duplicate endpoint ${budget.endpoint}`);
    else out.set(budget.endpoint, Object.freeze({ budget, timeouts }));
  }
  return out;
}
