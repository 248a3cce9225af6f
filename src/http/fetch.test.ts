import net, { type AddressInfo } from 'node:net';
import { Response } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpClient, type HttpClient } from './client.js';
import { startServer } from './servers.test-helpers.js';

/**
 * The client's `fetch()` where WHATWG's Response constructor and fetch's own argument rules differ
 * from what a user-land `new Response` takes. Node's global fetch, on the same loopback server, is the
 * reference: "fetch()-compatible" means answering as it does.
 */

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/** A loopback server that answers every request with `head` (a raw status line and headers) and `body`. */
async function rawServer(head: (path: string) => string, body = 'odd'): Promise<string> {
  const server = net.createServer((socket) => {
    socket.once('data', (data) => {
      const path = data.toString('latin1').split(' ')[1] ?? '/';
      const bytes = Buffer.from(`${head(path)}\r\ncontent-length: ${body.length}\r\n\r\n${body}`, 'latin1');
      socket.end(bytes);
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function client(origin: string): HttpClient {
  const made = createHttpClient({ name: 'odd', origin, p99Ms: 100, connections: 1 });
  cleanup.push(() => made.destroy());
  return made;
}

/** What a Response shows of its status line and body, read from a clone first, then from itself. */
async function shown(res: Response | globalThis.Response) {
  const clone = res.clone();
  const fromClone = [clone.status, clone.statusText, clone.ok, await clone.text()];
  return { line: [res.status, res.statusText, res.ok], body: await res.text(), fromClone };
}

describe('fetch(): the status line received, as Node’s fetch answers it (#9)', () => {
  it('a status outside 200-599 answers with that status, not a RangeError', async () => {
    // Before: `new Response(body, { status: 699 })` threw "RangeError: init["status"] must be in the
    // range of 200 to 599" out of fetch(), untyped, the answer lost.
    const origin = await rawServer((path) => `HTTP/1.1 ${path.slice(1)} Odd\r\nx-kept: yes`);
    const c = client(origin);
    for (const status of [600, 699, 999]) {
      const res = await c.fetch(`/${status}`);
      expect(res).toBeInstanceOf(Response);
      expect(res.headers.get('x-kept')).toBe('yes');
      const got = await shown(res);
      expect(got).toEqual({
        line: [status, 'Odd', false],
        body: 'odd',
        fromClone: [status, 'Odd', false, 'odd'],
      });
      expect(got).toEqual(await shown(await fetch(`${origin}/${status}`))); // Node's own fetch
    }
  });

  it('a reason phrase the constructor refuses (a control character, a non-latin1 one) is kept, not thrown', async () => {
    // Before: "TypeError: Invalid statusText" and a ByteString TypeError out of fetch().
    const origin = await rawServer((path) =>
      path === '/control'
        ? 'HTTP/1.1 200 O\x01K'
        : path === '/latin1'
          ? 'HTTP/1.1 503 Caf\xe9'
          : 'HTTP/1.1 699 \x7f',
    );
    const c = client(origin);
    for (const path of ['/control', '/latin1', '/both']) {
      const got = await shown(await c.fetch(path));
      expect(got, path).toEqual(await shown(await fetch(`${origin}${path}`)));
    }
    expect((await c.fetch('/control')).status).toBe(200);
    expect((await c.fetch('/latin1')).status).toBe(503);
  });

  it('an ordinary status line is a plain Response, nothing defined on it', async () => {
    const origin = await rawServer(() => 'HTTP/1.1 201 Created');
    const res = await client(origin).fetch('/');
    expect(Object.getOwnPropertyNames(res)).toEqual([]);
    expect([res.status, res.statusText, res.ok, await res.text()]).toEqual([201, 'Created', true, 'odd']);
  });
});

describe('fetch(): its arguments as WHATWG fetch takes them', () => {
  it('a null init is no init, as in Node’s fetch (#13)', async () => {
    // Before: INVALID_OPTIONS ("options must be an object"), while `fetch(url, null)` answers.
    const server = await startServer((req, res) => res.end(`${req.method} ${req.headers['content-length']}`));
    cleanup.push(() => server.close());
    const c = client(server.origin);
    const res = await c.fetch('/', null as never);
    expect([res.status, await res.text()]).toEqual([200, 'GET undefined']);
    expect(await (await fetch(server.origin, null as never)).text()).toBe('GET undefined');
    expect(server.seen.map((r) => [r.method, r.url])).toEqual([
      ['GET', '/'],
      ['GET', '/'],
    ]);
  });
});
