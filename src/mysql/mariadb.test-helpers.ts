import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sleep, systemClock } from '../clock/index.js';

/**
 * A real MariaDB for the tests, from Debian's `mariadb-server` (`.ci/run` installs it): a fresh data
 * directory in a temp dir any user can write, `mariadbd` on 127.0.0.1 and a free port, run as root
 * (`--user=root`, as CI runs). Start once per test file, stop in afterAll (the process is killed by
 * its own pid and the directory removed). A missing package fails the test file, never skips it.
 */
export interface TestMariadb {
  readonly host: '127.0.0.1';
  readonly port: number;
  readonly user: 'root';
  readonly database: 'prazo';
  stop(): Promise<void>;
}

const SERVER_PATHS = ['/usr/sbin/mariadbd', '/usr/bin/mariadbd', '/usr/sbin/mysqld'];
const INSTALL_PATHS = ['/usr/bin/mariadb-install-db', '/usr/bin/mysql_install_db'];

/** Runs `work`, timing it: its value or error, and how long it took in ms (real time, the system clock). */
export async function timed<T>(
  work: () => Promise<T>,
): Promise<{ value: T | undefined; error: unknown; ms: number }> {
  const started = systemClock.now();
  const outcome = await work().then(
    (value) => ({ value, error: undefined as unknown }),
    (error: unknown) => ({ value: undefined, error }),
  );
  return { ...outcome, ms: systemClock.now() - started };
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const find = (paths: readonly string[], what: string): string => {
  const found = paths.find((p) => existsSync(p));
  if (found === undefined) {
    throw new Error(
      `${what} not found (${paths.join(', ')}): install Debian's mariadb-server ` +
        '(apt-get install -y --no-install-recommends mariadb-server; .ci/run does)',
    );
  }
  return found;
};

export async function startMariadb(): Promise<TestMariadb> {
  const server = find(SERVER_PATHS, 'mariadbd');
  const install = find(INSTALL_PATHS, 'mariadb-install-db');
  const root = await mkdtemp(join(tmpdir(), 'prazo-mariadb-'));
  await chmod(root, 0o777);
  const data = join(root, 'data');
  const log = join(root, 'error.log');
  await promisify(execFile)(install, [
    '--no-defaults',
    `--datadir=${data}`,
    '--auth-root-authentication-method=normal',
    '--user=root',
    '--skip-test-db',
    '--skip-name-resolve',
  ]).catch(async (error: unknown) => {
    await rm(root, { recursive: true, force: true });
    throw new Error(`mariadb-install-db failed: ${String(error)}`);
  });
  const port = await freePort();
  const init = join(root, 'init.sql');
  await writeFile(init, 'CREATE DATABASE IF NOT EXISTS prazo;\n');
  const child: ChildProcess = spawn(
    server,
    [
      '--no-defaults',
      `--datadir=${data}`,
      `--socket=${join(root, 'mysqld.sock')}`,
      `--pid-file=${join(root, 'mysqld.pid')}`,
      `--log-error=${log}`,
      '--bind-address=127.0.0.1',
      `--port=${port}`,
      '--user=root',
      '--skip-name-resolve',
      '--skip-log-bin',
      '--innodb-buffer-pool-size=16M',
      '--innodb-flush-log-at-trx-commit=0',
      '--max-connections=200',
      `--init-file=${init}`,
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = systemClock.setTimer(() => child.kill('SIGKILL'), 10_000);
      await exited;
      systemClock.clearTimer(timer);
    }
    await rm(root, { recursive: true, force: true });
  };
  const startedAt = systemClock.now();
  for (;;) {
    const text = await readFile(log, 'utf8').catch(() => '');
    if (text.includes('ready for connections')) break;
    if (child.exitCode !== null || systemClock.now() - startedAt > 30_000) {
      await stop();
      throw new Error(
        `mariadbd did not start on 127.0.0.1:${port}:\n${text.split('\n').slice(-15).join('\n')}`,
      );
    }
    await sleep(systemClock, 50);
  }
  return { host: '127.0.0.1', port, user: 'root', database: 'prazo', stop };
}
