import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { ResolvedHealthThresholds } from '../calibrate/health.js';
import { InvalidOptionsError } from '../errors/options.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { didYouMean } from '../options/suggest.js';
import { readOptions } from '../options/validator.js';
import { type EndpointConfig, type MeshDefaults, readBody, type ServiceConfig } from './body.js';
import { CONFIG_LIMITS, DEFAULT_CONFIG_FILE } from './constants.js';
import type { DependencyConfig, ReadText } from './dependency.js';
import { type ConfigFormat, parseConfigText } from './document.js';
import { type ConfigProblem, formatPath, formatProblem, moreProblems } from './problem.js';

/**
 * The central configuration (SPEC C7): one reviewable file, `prazo.config.yaml` (or JSON), holding
 * the service's deadline policy, every dependency's calibration inputs, retry budget and hedging, and
 * the latency budget of each endpoint. Loaded into validated runtime objects; every problem is
 * reported with its file, line and key, all of them at once (up to CONFIG_LIMITS.maxProblems, then
 * one line counting the rest: a hostile file holds hundreds of thousands).
 */
export interface PrazoConfig {
  readonly file: string;
  readonly service: ServiceConfig | undefined;
  readonly dependencies: ReadonlyMap<string, DependencyConfig>;
  readonly endpoints: ReadonlyMap<string, EndpointConfig>;
  /** The top-level `mesh:` (defaults for `prazo export`), or absent. */
  readonly mesh?: MeshDefaults;
  /** The healthy-window guard's thresholds (`calibration:`, defaults applied): what histogram sources are judged by. */
  readonly calibration?: ResolvedHealthThresholds;
  /**
   * The dependency named `name`, or an `InvalidOptionsError` naming the file, the closest name ("did
   * you mean") and the names there are: `dependencies.get(name)!` fails later, as a bare `TypeError`.
   */
  dependency(name: string): DependencyConfig;
}

export interface ConfigCheck {
  /** Undefined when any problem is an error. */
  readonly config: PrazoConfig | undefined;
  /**
   * Errors and warnings, in file order: the first 100, then (when there are more) one last problem,
   * `… and N more (E error(s), W warning(s))`, at line 0.
   */
  readonly problems: readonly ConfigProblem[];
}

/** Options of {@link checkConfigText}, declared once. */
export const CHECK_OPTIONS = defineOptions({
  /** Name shown in problems; a name ending in `.json` is read as JSON. Default `prazo.config.yaml`. */
  file: option.string({ maxLength: 4096 }),
  /** Reads a histogram file named in the config (paths relative to the config's directory). */
  readText: option.fn<ReadText>(),
  /** The file's language. Default: `json` for a `.json` file name, else `yaml`. */
  format: option.oneOf<ConfigFormat, object>(['yaml', 'json']),
});

export type CheckOptions = OptionsOf<typeof CHECK_OPTIONS>;

const formatOf = (file: string): ConfigFormat => (/\.json$/i.test(file) ? 'json' : 'yaml');

/** Reads a text file with a size bound, without reading past it. */
export function readBoundedText(path: string, maxBytes: number): string {
  return readBoundedBytes(path, maxBytes).toString('utf8');
}

/**
 * Opened without blocking: a FIFO opened for reading waits for a writer, and `openSync` waits with
 * the whole event loop. (A constant Windows lacks, where no FIFO can be at a path.)
 */
const READ_NONBLOCK = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);

/** What a path that is not a regular file is, for the sentence that refuses it. */
function kindOf(stats: Stats): string {
  if (stats.isDirectory()) return 'a directory (EISDIR)';
  if (stats.isFIFO()) return 'a FIFO (named pipe)';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  return 'another kind of file';
}

/**
 * Reads a file's bytes with a size bound, without reading past it: a buffer of the file's size (a
 * watched config is read again at every change), grown if the file grows while it is read. Only a
 * regular file (or a symlink to one, as in a mounted ConfigMap) is read: a FIFO, a device or a
 * directory is refused before any read, since a read of one can wait forever or never end.
 */
export function readBoundedBytes(path: string, maxBytes: number): Buffer {
  const fd = openSync(path, READ_NONBLOCK);
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw new Error(`${path} is ${kindOf(stats)}, not a regular file`);
    let buffer = Buffer.allocUnsafe(Math.min(stats.size, maxBytes) + 1);
    let total = 0;
    for (;;) {
      if (total === buffer.length) {
        const grown = Buffer.allocUnsafe(Math.min(buffer.length * 2, maxBytes + 1));
        buffer.copy(grown, 0, 0, total);
        buffer = grown;
      }
      const n = readSync(fd, buffer, total, buffer.length - total, null);
      if (n === 0) break;
      total += n;
      if (total > maxBytes) throw new Error(`${path} is larger than ${maxBytes} bytes`);
    }
    return buffer.subarray(0, total);
  } finally {
    closeSync(fd);
  }
}

/** Validates config text; never throws on bad content (problems are returned). */
export function checkConfigText(text: string, options: CheckOptions = {}): ConfigCheck {
  const o = readOptions('checkConfigText', CHECK_OPTIONS, options);
  const file = o.file ?? DEFAULT_CONFIG_FILE;
  const readText = o.readText ?? ((f: string) => readBoundedText(f, 16 * 1024 * 1024));
  const doc = parseConfigText(text, o.format ?? formatOf(file));
  const raw = [...doc.problems];
  const body = doc.data === undefined ? undefined : readBody(doc.data, raw, readText);
  const all = raw
    .map((p): ConfigProblem => {
      const pos = p.line !== undefined ? { line: p.line, col: p.col || 1 } : doc.locate(p.path);
      const frame = p.frame === undefined ? {} : { frame: p.frame };
      return { file, ...pos, key: formatPath(p.path), message: p.message, severity: p.severity, ...frame };
    })
    .sort((a, b) => a.line - b.line || a.col - b.col);
  // The first ones in file order, then one line counting the rest (the parser's past its cap too).
  const cap = CONFIG_LIMITS.maxProblems;
  const count = (list: readonly ConfigProblem[], severity: string) =>
    list.reduce((n, p) => (p.severity === severity ? n + 1 : n), 0);
  const rest = all.slice(cap);
  const more = { errors: doc.omitted + count(rest, 'error'), warnings: count(rest, 'warning') };
  const problems =
    more.errors + more.warnings === 0
      ? all
      : [...all.slice(0, cap), moreProblems(file, cap, more.errors, more.warnings)];
  const errors = count(all, 'error') + doc.omitted;
  const config =
    errors > 0 || body === undefined
      ? undefined
      : Object.freeze({ file, ...body, dependency: dependencyLookup(file, body.dependencies) });
  const check = Object.freeze({ config, problems: Object.freeze(problems) });
  totals.set(check, { errors, warnings: count(all, 'warning') });
  return check;
}

/** Every problem a check found, listed or not, by severity. */
const totals = new WeakMap<ConfigCheck, { readonly errors: number; readonly warnings: number }>();

/**
 * How many errors and warnings `check` found, those past CONFIG_LIMITS.maxProblems included (its
 * `problems` list the first ones and one line counting the rest).
 */
export function problemCounts(check: ConfigCheck): { readonly errors: number; readonly warnings: number } {
  const known = totals.get(check);
  if (known !== undefined) return known;
  const errors = check.problems.filter((p) => p.severity === 'error').length;
  return { errors, warnings: check.problems.length - errors };
}

/** `config.dependency(name)`: the entry, or a problem that says which names there are. */
function dependencyLookup(
  file: string,
  dependencies: ReadonlyMap<string, DependencyConfig>,
): (name: string) => DependencyConfig {
  return (name) => {
    const found = typeof name === 'string' ? dependencies.get(name) : undefined;
    if (found !== undefined) return found;
    const names = [...dependencies.keys()];
    const listed = names.length <= 16 ? names.join(', ') : `${names.slice(0, 16).join(', ')}, ...`;
    const near = typeof name === 'string' ? didYouMean(name, names) : '';
    throw new InvalidOptionsError(`${file}: config.dependency`, [
      `no dependency ${JSON.stringify(typeof name === 'string' ? name.slice(0, 100) : name)}${near}` +
        (names.length === 0 ? ' (the file declares none)' : ` (the file declares: ${listed})`),
    ]);
  };
}

/** Validates a config file; histogram files are read relative to it. An unreadable file is a problem. */
export function checkConfigFile(path: string = DEFAULT_CONFIG_FILE): ConfigCheck {
  let text: string;
  try {
    text = readBoundedText(path, CONFIG_LIMITS.maxBytes);
  } catch (error) {
    const message = `cannot read: ${(error as Error).message}`;
    return {
      config: undefined,
      problems: [{ file: path, line: 0, col: 0, key: '', message, severity: 'error' }],
    };
  }
  const base = dirname(resolve(path));
  return checkConfigText(text, {
    file: path,
    readText: (f) => readBoundedText(resolve(base, f), 16 * 1024 * 1024),
  });
}

/**
 * Loads and validates a config file. Throws one `InvalidOptionsError` (context: the file) listing
 * every error as `file:line:col: error: key: message`. Warnings do not stop loading.
 */
export function loadConfig(path: string = DEFAULT_CONFIG_FILE): PrazoConfig {
  const { config, problems } = checkConfigFile(path);
  if (config !== undefined) return config;
  throw new InvalidOptionsError(path, problems.filter((p) => p.severity === 'error').map(formatProblem));
}
