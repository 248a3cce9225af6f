import type { Dependency } from '../dependency/dependency.js';
import { LIVE_KEYS } from '../dependency/options.js';
import { executorOf, type PreparedUpdate } from '../dependency/transport.js';
import type { ConfigVersion, Disposable } from '../dependency/types.js';
import { InvalidOptionsError } from '../errors/options.js';
import { isOptionsObject } from '../options/declare.js';
import type { DependencyConfig } from './dependency.js';
import type { PrazoConfig } from './load.js';
import type { Path } from './problem.js';

/**
 * How a new version of a watched config reaches the dependencies a service made from the old one
 * (SPEC X9, C7), and what it may change.
 *
 * The service binds what it made — executors (`createDependency`), HTTP clients, interceptors — and
 * each bound executor is matched to its config entry by name. A new version is compared with the one
 * in force, then applied to every bound executor through `dependency.update`, all or nothing: each
 * update is prepared (validated by the executor and by the clients that plan with it) before any is
 * made, so a version one of them refuses changes none of them.
 *
 * The rule for what cannot change live: the *set* of dependencies and their names is fixed for the
 * life of the process — an entry added, removed or renamed is code's business (something must call
 * it, or stop calling it) — and so are the keys others hold a reference to (`recorder`, which hedging
 * and the metrics read; `headerFormat`, which a client fixes when it is made). A version that changes
 * any of them is refused whole, each change reported at its line, and the version in force stays:
 * nothing is half-applied. Everything else an entry holds is live (`LIVE_KEYS`: the p99 and the
 * calibration inputs, the default deadline, the retry budget, hedging, backoff): after a version is
 * applied a bound executor's live settings are exactly its entry's — a key the entry does not give
 * returns to its default, whatever the code set. `pool` and `mesh` are read by `prazo check` and
 * `prazo export` only; `service`, `endpoints` and `calibration` are not executors' settings: a change
 * there is applied (and listed in the change), and the application reads them from the new config.
 */

/**
 * What `bind` accepts: an executor (`createDependency`), anything holding one as `dependency` (an
 * HTTP client: `createHttpClient`), or anything listing them (`interceptor(...)`: its
 * `dependencies()`, the origins it manages now).
 */
export type ConfigTarget =
  | Dependency
  | { readonly dependency: Dependency }
  | { dependencies(): Iterable<{ readonly dependency: Dependency }> };

/** A problem of a new version, at a path of its file (located to a line by the watcher). */
export interface VersionProblem {
  readonly path: Path;
  readonly message: string;
}

/** A bound dependency whose live settings a version changes, and which of them. */
export interface DependencyChange {
  readonly name: string;
  readonly keys: readonly string[];
}

/** How a new version differs from the one in force. */
export interface VersionDiff {
  /** What cannot change live (structure, names, held parts): the version is refused when any. */
  readonly problems: readonly VersionProblem[];
  readonly dependencies: readonly DependencyChange[];
  /** Top-level sections other than `dependencies` that changed. */
  readonly sections: readonly string[];
}

/** Why a key of an entry cannot change while the service runs. */
const HELD: Readonly<Record<string, string>> = Object.freeze({
  recorder: 'hedging and the metrics read the recorder the dependency was made with',
  headerFormat: 'a client fixes the deadline headers it writes when it is made',
});

const LIVE = new Set<string>(LIVE_KEYS);

/** Deep equality of config data (plain objects, arrays, scalars), key order aside. */
export function sameValue(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => sameValue(x, b[i]));
  }
  if (a instanceof Map || b instanceof Map) {
    if (!(a instanceof Map) || !(b instanceof Map) || a.size !== b.size) return false;
    for (const [k, v] of a) if (!b.has(k) || !sameValue(v, b.get(k))) return false;
    return true;
  }
  if (!isOptionsObject(a) || !isOptionsObject(b)) return false;
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const key of keys) if (!sameValue(a[key], b[key])) return false;
  return true;
}

/** An entry's live settings, every live key explicit (one the entry does not give: its default). */
export function liveSettings(entry: DependencyConfig): Record<string, unknown> {
  const options = entry.options as unknown as Record<string, unknown>;
  return Object.fromEntries(LIVE_KEYS.map((key) => [key, options[key]]));
}

/** Compares a new version with the one in force: what changes, and what cannot change live. */
export function compareVersions(previous: PrazoConfig, next: PrazoConfig): VersionDiff {
  const problems: VersionProblem[] = [];
  const dependencies: DependencyChange[] = [];
  const names = [...next.dependencies.keys()];
  for (const name of previous.dependencies.keys()) {
    if (!next.dependencies.has(name)) {
      problems.push({
        path: ['dependencies'],
        message:
          `\`${name}\` is no longer in the file (removed or renamed): the service was started with it and ` +
          'still calls it; a dependency is removed or renamed by a restart',
      });
    }
  }
  names.forEach((name, i) => {
    const before = previous.dependencies.get(name);
    if (before === undefined) {
      problems.push({
        path: ['dependencies', i, 'name'],
        message: `\`${name}\` is new: dependencies are made at start-up, so a new one is added by a restart`,
      });
      return;
    }
    const now = next.dependencies.get(name)!.options as unknown as Record<string, unknown>;
    const was = before.options as unknown as Record<string, unknown>;
    const keys: string[] = [];
    for (const key of new Set([...Object.keys(was), ...Object.keys(now)])) {
      if (key === 'name' || sameValue(was[key], now[key])) continue;
      if (LIVE.has(key)) keys.push(key);
      else {
        const why = HELD[key] ?? 'it is fixed when the dependency is made';
        problems.push({
          path: ['dependencies', i, key],
          message: `cannot change while the service runs (${why}); restart to apply it`,
        });
      }
    }
    if (keys.length > 0) dependencies.push(Object.freeze({ name, keys: Object.freeze(keys) }));
  });
  const sections: string[] = [];
  if (!sameValue(previous.service, next.service)) sections.push('service');
  if (!sameValue(previous.endpoints, next.endpoints)) sections.push('endpoints');
  if (!sameValue(previous.mesh, next.mesh)) sections.push('mesh');
  return { problems, dependencies, sections };
}

/** Whether `value` is an executor made by this copy of prazo. */
const isExecutor = (value: unknown): value is Dependency => executorOf(value) !== undefined;

/**
 * The executors a target stands for. Throws `InvalidOptionsError` for a target that holds none made
 * by this copy of prazo.
 */
export function executorsOf(target: unknown, where: string): Dependency[] {
  if (isExecutor(target)) return [target];
  const held = (target as { dependency?: unknown } | null)?.dependency;
  if (isExecutor(held)) return [held];
  const list = (target as { dependencies?: unknown } | null)?.dependencies;
  if (typeof list === 'function') {
    const out: Dependency[] = [];
    for (const view of list.call(target) as Iterable<{ dependency?: unknown }>) {
      if (isExecutor(view?.dependency)) out.push(view.dependency);
    }
    return out;
  }
  throw new InvalidOptionsError(where, [
    'a target must be an executor (createDependency), an HTTP client (createHttpClient) or an interceptor, made by this copy of prazo',
  ]);
}

/**
 * Prepares `config`'s settings for each executor (validated by it and by whoever plans with it,
 * nothing changed yet). Problems are placed at the entry of the dependency they are about.
 */
export function prepareVersion(
  config: PrazoConfig,
  executors: Iterable<Dependency>,
  version: ConfigVersion,
): { readonly updates: PreparedUpdate[]; readonly problems: VersionProblem[] } {
  const updates: PreparedUpdate[] = [];
  const problems: VersionProblem[] = [];
  const index = new Map([...config.dependencies.keys()].map((name, i) => [name, i]));
  for (const executor of executors) {
    const entry = config.dependencies.get(executor.name);
    const at: Path = ['dependencies', index.get(executor.name) ?? 0];
    if (entry === undefined) {
      problems.push({ path: ['dependencies'], message: `\`${executor.name}\` is bound but not in the file` });
      continue;
    }
    try {
      updates.push(executorOf(executor)!.prepare(liveSettings(entry), version));
    } catch (error) {
      if (!(error instanceof InvalidOptionsError)) throw error;
      for (const p of error.problems) problems.push({ path: at, message: `${executor.name}: ${p}` });
    }
  }
  return { updates, problems };
}

/** The executors bound to a watcher, each counted once however many targets hold it. */
export class Bindings {
  readonly #count = new Map<Dependency, number>();

  /** Executors bound now. */
  executors(): IterableIterator<Dependency> {
    return this.#count.keys();
  }

  /** Binds `executors`; the handle unbinds them (once). */
  add(executors: readonly Dependency[]): Disposable {
    for (const e of executors) this.#count.set(e, (this.#count.get(e) ?? 0) + 1);
    let bound = true;
    return {
      dispose: () => {
        if (!bound) return;
        bound = false;
        for (const e of executors) {
          const n = (this.#count.get(e) ?? 0) - 1;
          if (n > 0) this.#count.set(e, n);
          else this.#count.delete(e);
        }
      },
    };
  }

  clear(): void {
    this.#count.clear();
  }
}
