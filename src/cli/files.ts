import {
  closeSync,
  fsyncSync,
  openSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Writes `text` to `path` through a temporary file and a rename, for every file the CLI writes (the
 * config `prazo calibrate --write` edits, the rules and dashboard of `prazo rules`, the manifests of
 * `prazo export --out`, the demo's report): a reader (Prometheus reloading its rules, `kubectl apply`
 * in a loop, a config watcher) never sees half a file, and an interrupted or failed write leaves the
 * previous version whole. `text` may be a function that produces it, called once the temporary file
 * is open. When writing, producing or renaming fails, the temporary file is removed before the error
 * is thrown (a full disk, a target turned directory, a read-only mount would otherwise leave a
 * `.<name>.prazo-<pid>.tmp` beside it at each try).
 *
 * An existing file keeps its permissions, and a symlink (a mounted ConfigMap's target) is written
 * where it points; a new file is created with the default mode (0o666 less the umask).
 */
export function replaceFile(path: string, text: string | (() => string)): void {
  let real = path;
  let mode = 0o666;
  try {
    real = realpathSync(path);
    mode = statSync(real).mode & 0o7777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const temporary = join(dirname(real), `.${basename(real)}.prazo-${process.pid}.tmp`);
  const fd = openSync(temporary, 'w', mode);
  try {
    try {
      writeSync(fd, typeof text === 'function' ? text() : text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, real);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}
