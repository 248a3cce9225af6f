import { createHash } from 'node:crypto';
import { type FSWatcher, realpathSync, statSync, watch } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import type { Clock, Timer } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import type { ConfigVersion, Disposable } from '../dependency/types.js';
import { PrazoError } from '../errors/base.js';
import { ErrorCode } from '../errors/codes.js';
import { InvalidOptionsError } from '../errors/options.js';
import { defineOptions, type OptionsOf, option, type Resolved } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import { CONFIG_LIMITS } from './constants.js';
import { parseConfigText } from './document.js';
import { checkConfigText, type PrazoConfig, readBoundedBytes } from './load.js';
import { type ConfigProblem, formatPath, formatProblem } from './problem.js';
import {
  Bindings,
  type ConfigTarget,
  compareVersions,
  type DependencyChange,
  executorsOf,
  prepareVersion,
  type VersionProblem,
} from './watch-bind.js';

/**
 * `watchConfig(path, { onChange, onError })`: the central config as a living parameter (SPEC X9,
 * C7). The file is read and validated at start (as `loadConfig`), then watched: each new version is
 * validated with the loader's own rules, compared with the one in force (see `watch-bind.ts` for what
 * may change live), and applied to every dependency bound to the watcher, in place and all or
 * nothing — no restart, and no call in flight fails or loses what it was promised (a call keeps the
 * plan it started with). A version that fails is refused whole, every problem reported with its
 * line; the version in force stays.
 *
 * Why it watches the *directory*, never the file: a mounted Kubernetes ConfigMap is updated by an
 * atomic symlink swap (`prazo.config.yaml → ..data/prazo.config.yaml`, `..data → ..2026_…` renamed
 * over), and editors save by writing a new file and renaming it over the old: in both cases the inode
 * a file watch holds is never written again. Every event in the directory (and in the directory the
 * path resolves to through its symlinks) schedules a read; what decides whether anything changed is
 * the content (a SHA-256 of the file and of the histogram files it names), so a swap, a rename, a
 * touch and an unrelated file in the same directory all cost one read and nothing more.
 *
 * Why a debounce: a writer's steps (truncate, write, write; or create, rename, delete the old dir)
 * arrive as a burst of events, and the file read in the middle of one may be half-written. The read
 * waits until the directory has been quiet for `debounceMs` (25 ms: a burst takes a few ms, and a
 * version must be in force within 100 ms of its rename), and at most `10 × debounceMs` after the first
 * event of a burst that never goes quiet. A half-written file that still arrives is almost always
 * invalid, so it is refused and the next event brings the whole one.
 *
 * Why the watches are checked at every read: a watch is on one directory *inode*. When the directory
 * is deleted (a volume remounted, `rm -r` and a redeploy), the kernel drops the watch without an
 * error, and a directory made again at the same path is another inode that nobody watches: every
 * later edit would wait for the poll (#24: ~5 s each, where an event takes ~30 ms). So every read
 * (an event's, the poll's, `check()`) re-checks each watched directory — still there, still the same
 * inode (`dev:ino`), no event saying it was removed — and re-arms what died. While the directory is
 * gone, the nearest directory above it that exists is watched instead, so its return is an event
 * too; once it is back, its watch is armed again and the file read once more (what was written
 * before the watch existed raised no event).
 *
 * Why also a poll (`pollMs`, 5 s): events can be lost (an inotify queue overflow, a filesystem
 * without events), and the poll reads the file (and re-checks the watches) then. A file that
 * disappears is reported once and the version in force stays; when it reappears it is read like any
 * other version.
 *
 * Time: the debounce and the poll are timers of the `clock` option (on a `FakeClock` a test moves
 * them); file events are the operating system's. Nothing keeps the process alive (the watches are not
 * persistent, the timers are unref'd), and `close()` releases every watch and timer.
 */

/** Options of {@link watchConfig}, declared once. */
export const WATCH_CONFIG_OPTIONS = defineOptions(
  {
    /**
     * Called once a new version is in force on every bound dependency, with what changed. Default:
     * nothing.
     */
    onChange: option.fn<(change: ConfigChange) => void>(),
    /**
     * Called when a version is refused (the one in force stays), and once when the file disappears or
     * cannot be read. Default: a process warning with the same text.
     */
    onError: option.fn<(error: ConfigRejectedError) => void>(),
    /** Quiet time after the last event in the directory before the file is read, in ms. Default 25; [0, 60000]. */
    debounceMs: option.number({ default: 25, unit: 'ms', min: 0, max: 60_000 }),
    /**
     * The file is also read (and the watches re-armed) this often, in ms, in case an event was lost;
     * 0 turns it off. Default 5000; [0, 86400000], and 0 or at least 100.
     */
    pollMs: option.number({ default: 5_000, unit: 'ms', min: 0, max: 86_400_000 }),
    /** Where the debounce and poll timers run. Default: the system clock. */
    clock: option.clock(),
  },
  (o, report, { valid }) => {
    if (valid('pollMs') && o.pollMs > 0 && o.pollMs < 100) {
      report('pollMs', `must be 0 (no polling) or at least 100 ms, got ${o.pollMs}`);
    }
  },
);

export type WatchConfigOptions = OptionsOf<typeof WATCH_CONFIG_OPTIONS>;

/** What {@link ConfigWatcher.check} found. */
export type CheckOutcome = 'applied' | 'unchanged' | 'refused' | 'missing';

/** A new version in force (the argument of `onChange`). */
export interface ConfigChange {
  readonly file: string;
  /** The config in force now. */
  readonly config: PrazoConfig;
  readonly version: ConfigVersion;
  /** The config it replaced. */
  readonly previous: PrazoConfig;
  readonly previousVersion: ConfigVersion;
  /** Dependencies whose live settings changed, and which keys (whether bound or not). */
  readonly dependencies: readonly DependencyChange[];
  /**
   * Other sections that changed (`service`, `endpoints`, `mesh`): not settings of a dependency, so
   * nothing is applied for them; read them from `config`.
   */
  readonly sections: readonly string[];
  /** Bound executors that took the new settings. */
  readonly applied: number;
  /** The new version's warnings (a reduced attempt count, a pool check). */
  readonly warnings: readonly ConfigProblem[];
}

/** Why a version was not put in force. */
export type RejectionReason =
  /** The loader refused it (syntax, a key, a bound): the same problems `prazo check` prints. */
  | 'invalid'
  /** It changes what cannot change while the service runs (a dependency added, removed, renamed...). */
  | 'not-live'
  /** A bound dependency (or a client planning with it) refused its new settings. */
  | 'refused'
  /** The file is gone. */
  | 'missing'
  /** The file cannot be read (permissions, larger than 1 MiB). */
  | 'unreadable';

/**
 * A version of a watched config was not put in force: the one in force (`kept`) stays (SPEC X9).
 * `problems` are the loader's own, each with its line (`formatProblem` prints them as `prazo check`
 * does); the message lists them.
 */
export class ConfigRejectedError extends PrazoError {
  protected static override readonly prazoCodes = [ErrorCode.CONFIG_REJECTED];
  readonly file: string;
  readonly reason: RejectionReason;
  /** Every problem, with its line (0 for the file as a whole). */
  readonly problems: readonly ConfigProblem[];
  /** The refused content's hash, when there was content to hash. */
  readonly hash: string | undefined;
  /** The version that stays in force. */
  readonly kept: ConfigVersion;

  constructor(details: {
    readonly file: string;
    readonly reason: RejectionReason;
    readonly problems: readonly ConfigProblem[];
    readonly hash: string | undefined;
    readonly kept: ConfigVersion;
  }) {
    const what = details.hash === undefined ? details.file : `${details.file} (${details.hash})`;
    const kept = `keeping ${details.kept.hash} (generation ${details.kept.generation})`;
    const lines = details.problems.map((p) => `  ${formatProblem(p)}`).join('\n');
    super(ErrorCode.CONFIG_REJECTED, `${what}: ${details.reason} version refused, ${kept}:\n${lines}`);
    this.file = details.file;
    this.reason = details.reason;
    this.problems = Object.freeze([...details.problems]);
    this.hash = details.hash;
    this.kept = details.kept;
  }
}

/** A watched config: the version in force, the dependencies bound to it, and `close()`. */
export interface ConfigWatcher extends Disposable {
  /** The path given. */
  readonly file: string;
  /** The config in force. */
  readonly config: PrazoConfig;
  /** Its version: content hash and generation (1 at start). */
  readonly version: ConfigVersion;
  /**
   * Binds what the service made from the config (executors, HTTP clients, interceptors), matched to
   * its entries by dependency name: each takes the settings of the version in force now (all or
   * nothing: `InvalidOptionsError` when a name is not in the file or a target refuses its settings),
   * then every version applied later. The handle unbinds.
   */
  bind(...targets: ConfigTarget[]): Disposable;
  /** Reads the file now, without waiting for an event (a SIGHUP handler, a test). */
  check(): CheckOutcome;
  /** Stops watching: every watch and timer released, the bindings dropped. Idempotent. */
  close(): void;
}

/** The first 16 hex digits of a SHA-256: what identifies a version (`sha256sum | cut -c1-16`). */
const digest = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex').slice(0, 16);

/** Bound of a histogram file a config names (the loader's own). */
const MAX_HISTOGRAM_BYTES = 16 * 1024 * 1024;

/** A read of the file and the histograms it names: their content, and how to tell it changed. */
interface Snapshot {
  readonly hash: string;
  /** The config's hash and the histograms' (`hash` alone when it names none). */
  readonly key: string;
  readonly check: ReturnType<typeof checkConfigText>;
  readonly text: string;
  readonly inputs: readonly { readonly path: string; readonly digest: string }[];
}

/** Reads and validates the config at `path` (histograms relative to it), recording what it read. */
function readSnapshot(path: string, bytes: Buffer): Snapshot {
  const text = bytes.toString('utf8');
  const base = dirname(resolve(path));
  const inputs: { path: string; digest: string }[] = [];
  const check = checkConfigText(text, {
    file: path,
    readText: (f) => {
      const full = resolve(base, f);
      const read = readBoundedBytes(full, MAX_HISTOGRAM_BYTES);
      inputs.push({ path: full, digest: digest(read) });
      return read.toString('utf8');
    },
  });
  const hash = digest(bytes);
  return { hash, key: keyOf(hash, inputs), check, text, inputs };
}

const keyOf = (
  hash: string,
  inputs: readonly { readonly path: string; readonly digest: string }[],
): string => (inputs.length === 0 ? hash : `${hash} ${inputs.map((i) => `${i.path}=${i.digest}`).join(' ')}`);

/** The key of the histograms `inputs` named, read again now (a file gone reads as gone). */
function inputsKey(hash: string, inputs: Snapshot['inputs']): string {
  const now = inputs.map((i) => {
    try {
      return { path: i.path, digest: digest(readBoundedBytes(i.path, MAX_HISTOGRAM_BYTES)) };
    } catch {
      return { path: i.path, digest: 'unreadable' };
    }
  });
  return keyOf(hash, now);
}

/** Places problems at their lines in `text` (the loader's locator). */
function locate(file: string, text: string, problems: readonly VersionProblem[]): ConfigProblem[] {
  const doc = parseConfigText(text, /\.json$/i.test(file) ? 'json' : 'yaml');
  return problems
    .map((p): ConfigProblem => {
      const { line, col } = doc.locate(p.path);
      return { file, line, col, key: formatPath(p.path), message: p.message, severity: 'error' };
    })
    .sort((a, b) => a.line - b.line || a.col - b.col);
}

const fileProblem = (file: string, message: string): ConfigProblem => ({
  file,
  line: 0,
  col: 0,
  key: '',
  message,
  severity: 'error',
});

/**
 * Watches a config file and keeps the dependencies bound to it on the version in force (SPEC X9).
 * Reads and validates the file at once: throws the `InvalidOptionsError` `loadConfig` throws when it
 * cannot be loaded (a service must not start on a config it cannot read).
 *
 * @example
 * const watcher = watchConfig('/etc/prazo/prazo.config.yaml', {
 *   onChange: (c) => log.info(`config ${c.version.hash} in force`, c.dependencies),
 *   onError: (e) => log.error(e.message), // every problem with its line; the old version stays
 * });
 * const inventory = createHttpClient({ origin, ...watcher.config.dependencies.get('inventory')!.options });
 * watcher.bind(inventory); // later versions reach it in place
 */
export function watchConfig(path: string, options: WatchConfigOptions = {}): ConfigWatcher {
  const o = readOptions('watchConfig', WATCH_CONFIG_OPTIONS, options);
  if (typeof path !== 'string' || path.length === 0) {
    throw new InvalidOptionsError('watchConfig', ['`path` must be a non-empty string (the config file)']);
  }
  return new Watcher(path, o);
}

class Watcher implements ConfigWatcher {
  readonly file: string;
  readonly #clock: Clock;
  readonly #debounceMs: number;
  readonly #pollMs: number;
  readonly #onChange: ((change: ConfigChange) => void) | undefined;
  readonly #onError: ((error: ConfigRejectedError) => void) | undefined;
  readonly #bindings = new Bindings();
  /** The directories watched: each one's watch and the inode it is on. */
  readonly #watches = new Map<string, DirectoryWatch>();
  /** Directories whose watch was lost (gone, deleted, failed): armed again, they are read once more. */
  readonly #lost = new Set<string>();
  #config: PrazoConfig;
  #version: ConfigVersion;
  #inForce: Snapshot;
  /** The last content read (applied or refused): the same content is not evaluated twice. */
  #last: Snapshot;
  #missing = false;
  #unreadable: string | undefined;
  #debounce: Timer | undefined;
  #burstAt = 0;
  #poll: Timer | undefined;
  #busy = false;
  #again = false;
  #closed = false;

  constructor(file: string, o: Resolved<(typeof WATCH_CONFIG_OPTIONS)['specs']>) {
    this.file = file;
    this.#clock = o.clock ?? systemClock;
    this.#debounceMs = o.debounceMs;
    this.#pollMs = o.pollMs;
    this.#onChange = o.onChange;
    this.#onError = o.onError;
    let bytes: Buffer;
    try {
      bytes = readBoundedBytes(file, CONFIG_LIMITS.maxBytes);
    } catch (error) {
      throw new InvalidOptionsError(file, [
        formatProblem(fileProblem(file, `cannot read: ${(error as Error).message}`)),
      ]);
    }
    const first = readSnapshot(file, bytes);
    if (first.check.config === undefined) {
      const errors = first.check.problems.filter((p) => p.severity === 'error').map(formatProblem);
      throw new InvalidOptionsError(file, errors);
    }
    this.#inForce = first;
    this.#last = first;
    this.#config = first.check.config;
    this.#version = Object.freeze({ hash: first.hash, generation: 1 });
    this.#arm();
    this.#schedulePoll();
  }

  get config(): PrazoConfig {
    return this.#config;
  }

  get version(): ConfigVersion {
    return this.#version;
  }

  bind(...targets: ConfigTarget[]): Disposable {
    if (this.#closed) throw new InvalidOptionsError('watchConfig.bind', ['the watcher is closed']);
    const executors = [...new Set(targets.flatMap((t) => executorsOf(t, 'watchConfig.bind')))];
    const unknown = executors.filter((e) => !this.#config.dependencies.has(e.name));
    if (unknown.length > 0) {
      const known = [...this.#config.dependencies.keys()].join(', ') || 'none';
      throw new InvalidOptionsError(
        'watchConfig.bind',
        unknown.map((e) => `\`${e.name}\` is not a dependency of ${this.file} (its dependencies: ${known})`),
      );
    }
    const { updates, problems } = prepareVersion(this.#config, executors, this.#version);
    if (problems.length > 0) {
      throw new InvalidOptionsError(
        'watchConfig.bind',
        problems.map((p) => p.message),
      );
    }
    for (const update of updates) update.commit();
    return this.#bindings.add(executors);
  }

  check(): CheckOutcome {
    if (this.#closed) return 'unchanged';
    if (this.#busy) {
      this.#again = true; // called from onChange/onError: read again once this check is over
      return 'unchanged';
    }
    this.#busy = true;
    try {
      let outcome = this.#read();
      while (this.#again && !this.#closed) {
        this.#again = false;
        outcome = this.#read();
      }
      return outcome;
    } finally {
      this.#busy = false;
      this.#arm();
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#debounce !== undefined) this.#clock.clearTimer(this.#debounce);
    if (this.#poll !== undefined) this.#clock.clearTimer(this.#poll);
    this.#debounce = undefined;
    this.#poll = undefined;
    for (const w of this.#watches.values()) w.watcher.close();
    this.#watches.clear();
    this.#lost.clear();
    this.#bindings.clear();
  }

  dispose(): void {
    this.close();
  }

  // ── reading a version ──────────────────────────────────────────────────────────────────────────

  #read(): CheckOutcome {
    let bytes: Buffer;
    try {
      bytes = readBoundedBytes(this.file, CONFIG_LIMITS.maxBytes);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        if (!this.#missing) {
          this.#missing = true;
          this.#reject('missing', undefined, [
            fileProblem(this.file, 'the file is gone; the version in force stays until it is back'),
          ]);
        }
        return 'missing';
      }
      const message = `cannot read: ${(error as Error).message}`;
      if (this.#unreadable !== message) {
        this.#unreadable = message;
        this.#reject('unreadable', undefined, [fileProblem(this.file, message)]);
      }
      return 'refused';
    }
    this.#missing = false;
    this.#unreadable = undefined;
    const last = this.#last;
    const hash = digest(bytes);
    if (hash === last.hash && inputsKey(hash, last.inputs) === last.key) return 'unchanged';
    const next = readSnapshot(this.file, bytes);
    this.#last = next;
    if (next.key === this.#inForce.key) return 'unchanged'; // back to the version in force
    return this.#evaluate(next);
  }

  #evaluate(next: Snapshot): CheckOutcome {
    const config = next.check.config;
    if (config === undefined) {
      const errors = next.check.problems.filter((p) => p.severity === 'error');
      this.#reject('invalid', next.hash, errors);
      return 'refused';
    }
    const diff = compareVersions(this.#config, config);
    if (diff.problems.length > 0) {
      this.#reject('not-live', next.hash, locate(this.file, next.text, diff.problems));
      return 'refused';
    }
    const version = Object.freeze({ hash: next.hash, generation: this.#version.generation + 1 });
    const { updates, problems } = prepareVersion(config, this.#bindings.executors(), version);
    if (problems.length > 0) {
      this.#reject('refused', next.hash, locate(this.file, next.text, problems));
      return 'refused';
    }
    for (const update of updates) update.commit();
    const change: ConfigChange = Object.freeze({
      file: this.file,
      config,
      version,
      previous: this.#config,
      previousVersion: this.#version,
      dependencies: diff.dependencies,
      sections: Object.freeze([...diff.sections]),
      applied: updates.length,
      warnings: Object.freeze(next.check.problems.filter((p) => p.severity === 'warning')),
    });
    this.#config = config;
    this.#version = version;
    this.#inForce = next;
    this.#notify(() => this.#onChange?.(change));
    return 'applied';
  }

  #reject(reason: RejectionReason, hash: string | undefined, problems: readonly ConfigProblem[]): void {
    const error = new ConfigRejectedError({ file: this.file, reason, problems, hash, kept: this.#version });
    const onError = this.#onError;
    if (onError === undefined) process.emitWarning(error.message, 'PrazoWarning');
    else this.#notify(() => onError(error));
  }

  /** Runs a user callback: one that throws is a warning, never the watcher's failure. */
  #notify(callback: () => void): void {
    try {
      callback();
    } catch (error) {
      process.emitWarning(`prazo: a watchConfig callback threw: ${String(error)}`, 'PrazoWarning');
    }
  }

  // ── watching ───────────────────────────────────────────────────────────────────────────────────

  /** An event in a watched directory: read once the directory has been quiet for `debounceMs`. */
  #onEvent = (): void => {
    if (this.#closed) return;
    const clock = this.#clock;
    const now = clock.now();
    if (this.#debounce === undefined) this.#burstAt = now;
    else clock.clearTimer(this.#debounce);
    const due = Math.min(now + this.#debounceMs, this.#burstAt + 10 * this.#debounceMs);
    this.#debounce = clock.setTimer(
      () => {
        this.#debounce = undefined;
        this.check();
      },
      due - now,
      { unref: true },
    );
  };

  #schedulePoll(): void {
    if (this.#pollMs === 0 || this.#closed) return;
    this.#poll = this.#clock.setTimer(
      () => {
        this.#poll = undefined;
        this.check();
        this.#schedulePoll();
      },
      this.#pollMs,
      { unref: true },
    );
  }

  /**
   * Watches the file's directory and the one it resolves to through its symlinks (both the same for
   * a plain file), each on the inode it is now. A watch whose directory went away, was made again
   * (another inode), or said it was removed is closed; a directory that is gone is replaced by the
   * nearest one above it that exists (its return is an event there); a directory watched again
   * after it was lost is read once more.
   */
  #arm(): void {
    if (this.#closed) return;
    const path = resolve(this.file);
    const dirs = [dirname(path)];
    try {
      dirs.push(dirname(realpathSync(path)));
    } catch {
      // The file is gone: its directory is still watched, for its return.
    }
    const wanted = new Map<string, string>();
    for (const dir of dirs) {
      const id = directoryId(dir);
      if (id !== undefined) {
        wanted.set(dir, id);
        continue;
      }
      this.#lost.add(dir);
      const above = existingAncestor(dir);
      if (above !== undefined) wanted.set(above.dir, above.id);
    }
    for (const [dir, entry] of this.#watches) {
      if (!entry.removed && wanted.get(dir) === entry.id) continue;
      entry.watcher.close();
      this.#watches.delete(dir);
      this.#lost.add(dir);
    }
    let missed = false;
    for (const [dir, id] of wanted) {
      if (this.#watches.has(dir)) continue;
      const name = basename(dir);
      const entry: DirectoryWatch = { watcher: undefined as never, id, removed: false };
      try {
        entry.watcher = watch(dir, { persistent: false }, (_event, filename) => {
          // The directory's own name: it was deleted or renamed (IN_DELETE_SELF, IN_MOVE_SELF), or a
          // file of that name changed in it; either way the next read checks it and re-arms.
          if (filename === name) entry.removed = true;
          this.#onEvent();
        });
      } catch {
        this.#lost.add(dir);
        continue; // gone again meanwhile: the next read arms it (or the one above) again
      }
      entry.watcher.on('error', () => {
        entry.watcher.close();
        if (this.#watches.get(dir) === entry) {
          this.#watches.delete(dir);
          this.#lost.add(dir);
        }
        this.#onEvent();
      });
      this.#watches.set(dir, entry);
      if (this.#lost.delete(dir)) missed = true;
    }
    for (const dir of this.#lost) if (!dirs.includes(dir) && !wanted.has(dir)) this.#lost.delete(dir);
    if (missed) this.#onEvent(); // what was written while it was not watched raised no event
  }
}

/** A watched directory: its watch, the inode it is on, and whether an event said it was removed. */
interface DirectoryWatch {
  watcher: FSWatcher;
  readonly id: string;
  removed: boolean;
}

/** `dev:ino` of a directory, or undefined when there is no directory at `dir`. */
function directoryId(dir: string): string | undefined {
  try {
    const st = statSync(dir);
    return st.isDirectory() ? `${st.dev}:${st.ino}` : undefined;
  } catch {
    return undefined;
  }
}

/** The nearest directory above `dir` that exists (the root at worst), with its `dev:ino`. */
function existingAncestor(dir: string): { dir: string; id: string } | undefined {
  let at = dir;
  for (let up = dirname(at); up !== at; up = dirname(at)) {
    at = up;
    const id = directoryId(at);
    if (id !== undefined) return { dir: at, id };
  }
  return undefined;
}
