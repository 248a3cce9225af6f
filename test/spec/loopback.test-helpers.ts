import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';

/**
 * What a spec test on loopback sockets closes after each test, in reverse order (servers, clients):
 * call once at the top of the test file, then push closers and `listen` servers.
 */
export function closingAfterEach(): {
  readonly closers: Array<() => Promise<void>>;
  listen(server: Server): Promise<string>;
} {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const fn of closers.splice(0).reverse()) await fn();
  });
  const listen = async (server: Server): Promise<string> => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  return { closers, listen };
}
