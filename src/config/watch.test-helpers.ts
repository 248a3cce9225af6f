import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitForOrThrow } from '../clock/poll.test-helpers.js';

/**
 * A Kubernetes ConfigMap volume, written the way the kubelet's AtomicWriter writes it
 * (pkg/volume/util/atomic_writer.go): the payload goes into a fresh timestamped directory
 * `..2026_12_01_11_22_01.<random>`, a symlink `..data_tmp` is made to it and renamed over `..data`
 * (the one atomic step), each key is a symlink `key → ..data/key` made once, and the previous
 * timestamped directory is removed last. A pod sees either the whole old payload or the whole new.
 */
export class ConfigMapVolume {
  readonly dir: string;
  #seq = 0;

  constructor(dir: string = mkdtempSync(join(tmpdir(), 'prazo-configmap-'))) {
    this.dir = dir;
  }

  /** The path a pod reads a key at (the user-visible symlink). */
  path(key: string): string {
    return join(this.dir, key);
  }

  /**
   * Writes a new payload. Returns after the rename that makes it visible; `onRename` is called right
   * after that rename (before the old directory is removed), for latency measurements.
   */
  update(payload: Readonly<Record<string, string>>, onRename?: () => void): void {
    const dir = this.dir;
    this.#seq += 1;
    const stamp = `..2026_12_01_11_22_${String(this.#seq).padStart(2, '0')}.${Math.floor(Math.random() * 1e9)}`;
    const tsDir = join(dir, stamp);
    mkdirSync(tsDir, { mode: 0o755 });
    for (const [key, text] of Object.entries(payload)) {
      const file = join(tsDir, key);
      mkdirSync(join(file, '..'), { recursive: true });
      writeFileSync(file, text, { mode: 0o644 });
    }
    const data = join(dir, '..data');
    const old = existsSync(data) ? readlinkSync(data) : undefined;
    const tmp = join(dir, '..data_tmp');
    symlinkSync(stamp, tmp);
    renameSync(tmp, data);
    onRename?.();
    for (const key of Object.keys(payload)) {
      const top = key.split('/')[0]!;
      const visible = join(dir, top);
      if (!existsSync(visible)) symlinkSync(join('..data', top), visible);
    }
    if (old !== undefined) rmSync(join(dir, old), { recursive: true, force: true });
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * inotify watches this process holds now, counted where the kernel keeps them: one `inotify wd:` line
 * per watch in /proc/self/fdinfo of each inotify descriptor (unref'd handles included, which
 * `process.getActiveResourcesInfo()` does not list).
 */
export function inotifyWatches(): number {
  let watches = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    let target = '';
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue;
    }
    if (!target.includes('inotify')) continue;
    try {
      watches += readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('inotify wd:')).length;
    } catch {
      // closed meanwhile
    }
  }
  return watches;
}

/** Waits (real time, polling every 2 ms) until `condition()` holds, or fails after `ms`. */
export function waitFor(condition: () => boolean, ms = 5_000, what = 'condition'): Promise<void> {
  return waitForOrThrow(condition, ms, what);
}
