import { InvalidOptionsError } from '../errors/options.js';
import { didYouMean } from '../options/suggest.js';
import { LATENCY_BUDGET_LIMITS } from './constants.js';
import type { BudgetComponent, BudgetProblem, ComponentKind, LatencyBudget } from './types.js';

/**
 * Reads a budget from plain data (a config file's `endpoints` entry), collecting every problem with
 * the path it was found at, so a loader can point at the file line. Shape (snake_case as in the
 * seed's YAML, camelCase accepted):
 *
 * ```yaml
 * endpoint: POST /pedidos
 * total_slo_ms: 800
 * components:
 *   - { name: gateway, kind: local, slice_ms: 30 }
 *   - { name: servico_estoque, kind: remote, slice_ms: 300, dependency: inventory }
 * ```
 */

const KINDS: Readonly<Record<string, ComponentKind>> = Object.freeze({
  remote: 'remote',
  'long-tail': 'remote',
  local: 'local',
  deterministic: 'local',
});

type Path = readonly (string | number)[];

/** Every spelling of an endpoint's keys and of a component's, for "did you mean". */
const ENDPOINT_KEYS = ['endpoint', 'name', 'total_slo_ms', 'totalSloMs', 'components', 'componentes'];
const COMPONENT_KEYS = ['name', 'kind', 'slice_ms', 'sliceMs', 'dependency'];

/** Refuses every key outside `used` (the spellings this entry uses), suggesting the one meant. */
function unknownKeys(
  o: Record<string, unknown>,
  at: Path,
  used: readonly string[],
  problems: BudgetProblem[],
  spellings: readonly string[],
): void {
  for (const key of Object.keys(o)) {
    if (used.includes(key)) continue;
    const hint = spellings.includes(key) ? ' (given twice, in two spellings)' : didYouMean(key, used);
    problems.push({ path: [...at, key], message: `unknown key${hint}`, severity: 'error' });
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A duration of the budget (the SLO or a slice), in ms: finite, in (0, maxTotalSloMs]. */
const validMs = (v: unknown): v is number =>
  typeof v === 'number' && Number.isFinite(v) && v > 0 && v <= LATENCY_BUDGET_LIMITS.maxTotalSloMs;

const validName = (v: unknown): v is string =>
  typeof v === 'string' && v.trim() !== '' && v.length <= LATENCY_BUDGET_LIMITS.maxNameLength;

/**
 * Refuses a problem path that is not a list of keys and indexes (`at` of parseBudget, validateBudget
 * and deriveTimeouts): spread into every problem's path, a string would become its characters, and a
 * number would throw a TypeError.
 */
export function checkPath(context: string, at: unknown): void {
  if (Array.isArray(at) && at.every((k) => typeof k === 'string' || typeof k === 'number')) return;
  throw new InvalidOptionsError(context, ['`at` must be a list of keys and indexes, e.g. ["endpoints", 0]']);
}

/**
 * Why `value` is not a budget `parseBudget` could have returned, or undefined when it is one. The
 * functions that take a parsed budget (`validateBudget`, `deriveTimeouts`, the runners) check it
 * first: a hand-built budget with a NaN slice would otherwise pass validation (NaN compares false)
 * and run with a NaN deadline, and a wrong shape would fail as a TypeError deep inside.
 */
export function budgetShapeProblem(value: unknown): string | undefined {
  if (!isRecord(value)) return 'must be a parsed LatencyBudget (from parseBudget)';
  if (!validName(value.endpoint)) return '`endpoint` must be a non-empty string';
  if (!validMs(value.totalSloMs))
    return `\`totalSloMs\` must be a number of ms in (0, ${LATENCY_BUDGET_LIMITS.maxTotalSloMs}]`;
  const list = value.components;
  if (!Array.isArray(list) || list.length === 0 || list.length > LATENCY_BUDGET_LIMITS.maxComponents)
    return `\`components\` must be a list of 1 to ${LATENCY_BUDGET_LIMITS.maxComponents} slices`;
  const seen = new Set<string>();
  for (const [i, c] of list.entries()) {
    const at = `\`components[${i}]\``;
    if (!isRecord(c)) return `${at} must be { name, kind, sliceMs }`;
    if (!validName(c.name)) return `${at}.name must be a non-empty string`;
    if (seen.has(c.name)) return `${at}.name ${JSON.stringify(c.name)} appears twice`;
    seen.add(c.name);
    if (c.kind !== 'remote' && c.kind !== 'local') return `${at}.kind must be remote or local`;
    if (!validMs(c.sliceMs))
      return `${at}.sliceMs must be a number of ms in (0, ${LATENCY_BUDGET_LIMITS.maxTotalSloMs}]`;
    if (c.dependency !== undefined && (typeof c.dependency !== 'string' || c.dependency === ''))
      return `${at}.dependency must name a configured dependency`;
  }
  return undefined;
}

/** First of the spellings present in `o`, with its key. */
function field(o: Record<string, unknown>, ...names: string[]): [string, unknown] {
  for (const n of names) if (Object.hasOwn(o, n)) return [n, o[n]];
  return [names[0]!, undefined];
}

export interface ParsedBudget {
  /** Undefined when a problem of severity `error` makes the budget unusable. */
  readonly budget: LatencyBudget | undefined;
  readonly problems: readonly BudgetProblem[];
}

export function parseBudget(raw: unknown, at: Path = []): ParsedBudget {
  checkPath('parseBudget', at);
  const problems: BudgetProblem[] = [];
  const error = (path: Path, message: string) => problems.push({ path, message, severity: 'error' });
  if (!isRecord(raw)) {
    error(at, 'an endpoint budget must be a mapping with endpoint, total_slo_ms and components');
    return { budget: undefined, problems };
  }
  const [endpointKey, endpoint] = field(raw, 'endpoint', 'name');
  if (
    typeof endpoint !== 'string' ||
    endpoint.trim() === '' ||
    endpoint.length > LATENCY_BUDGET_LIMITS.maxNameLength
  ) {
    error([...at, endpointKey], `\`${endpointKey}\` must be a non-empty string (e.g. "POST /pedidos")`);
  }
  const [sloKey, slo] = field(raw, 'total_slo_ms', 'totalSloMs');
  if (!validMs(slo))
    error(
      [...at, sloKey],
      `\`${sloKey}\` must be a number of ms in (0, ${LATENCY_BUDGET_LIMITS.maxTotalSloMs}]`,
    );
  const [listKey, list] = field(raw, 'components', 'componentes');
  unknownKeys(raw, at, [endpointKey, sloKey, listKey], problems, ENDPOINT_KEYS);
  if (!Array.isArray(list) || list.length === 0 || list.length > LATENCY_BUDGET_LIMITS.maxComponents) {
    error(
      [...at, listKey],
      `\`${listKey}\` must be a list of 1 to ${LATENCY_BUDGET_LIMITS.maxComponents} slices`,
    );
    return { budget: undefined, problems };
  }
  const components: BudgetComponent[] = [];
  const seen = new Set<string>();
  list.forEach((item, i) => {
    const c = parseComponent(item, [...at, listKey, i], problems);
    if (c === undefined) return;
    if (seen.has(c.name)) error([...at, listKey, i, 'name'], `duplicate component ${c.name}`);
    seen.add(c.name);
    components.push(c);
  });
  if (problems.some((p) => p.severity === 'error')) return { budget: undefined, problems };
  const budget = Object.freeze({
    endpoint: (endpoint as string).trim(),
    totalSloMs: slo as number,
    components: Object.freeze(components),
  });
  return { budget, problems };
}

function parseComponent(item: unknown, path: Path, problems: BudgetProblem[]): BudgetComponent | undefined {
  const error = (p: Path, message: string) => problems.push({ path: p, message, severity: 'error' });
  if (!isRecord(item)) {
    error(path, 'a component must be a mapping: { name, kind: remote|local, slice_ms }');
    return undefined;
  }
  const before = problems.length;
  const name = item.name;
  if (typeof name !== 'string' || name.trim() === '' || name.length > LATENCY_BUDGET_LIMITS.maxNameLength) {
    error([...path, 'name'], '`name` must be a non-empty string');
  }
  const kind =
    typeof item.kind === 'string' && Object.hasOwn(KINDS, item.kind) ? KINDS[item.kind] : undefined;
  if (kind === undefined) {
    error([...path, 'kind'], '`kind` must be remote (long-tail) or local (deterministic)');
  }
  const [sliceKey, slice] = field(item, 'slice_ms', 'sliceMs');
  if (!(typeof slice === 'number' && Number.isFinite(slice) && slice > 0)) {
    error([...path, sliceKey], `\`${sliceKey}\` must be a number of ms > 0`);
  } else if (!validMs(slice)) {
    // Bounded like the SLO it is a part of: slices of 1e308 ms would add up to Infinity.
    error(
      [...path, sliceKey],
      `\`${sliceKey}\` must be at most ${LATENCY_BUDGET_LIMITS.maxTotalSloMs} ms (the longest SLO)`,
    );
  }
  const dependency = item.dependency;
  if (dependency !== undefined && (typeof dependency !== 'string' || dependency === '')) {
    error([...path, 'dependency'], '`dependency` must name a configured dependency');
  }
  unknownKeys(item, path, ['name', 'kind', sliceKey, 'dependency'], problems, COMPONENT_KEYS);
  if (problems.slice(before).some((p) => p.severity === 'error')) return undefined;
  const c: BudgetComponent = { name: (name as string).trim(), kind: kind!, sliceMs: slice as number };
  return Object.freeze(dependency === undefined ? c : { ...c, dependency: dependency as string });
}
