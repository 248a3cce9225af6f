import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { isInvalidOptions } from '../../../src/errors/index.js';
import { createHttpClient, type HttpClient } from '../../../src/http/index.js';
import { answerOk, type FaultServer, startHttpFault } from '../faults/http-faults.js';

/**
 * What a caller hands prazo's client, and what a config file hands the loader (SPEC R5, D1, D5, C7):
 * header values are bounded and cannot smuggle a header line, a caller's own deadline header never
 * travels in place of prazo's, and a config file cannot reach Object.prototype.
 */

let server: FaultServer;
let client: HttpClient;
beforeAll(async () => {
  server = await startHttpFault('ok', answerOk);
  client = createHttpClient({ name: 'inputs', origin: server.origin, p99Ms: 100 });
});
afterAll(async () => {
  await client.destroy();
  await server.close();
});

const refused = async (p: Promise<unknown>): Promise<unknown> => {
  try {
    await p;
    return undefined;
  } catch (error) {
    return error;
  }
};

describe('outgoing header values', () => {
  it.each([
    ['a 300-character key', 'k'.repeat(300)],
    ['a 10 MB key', 'k'.repeat(10 * 1024 * 1024)],
    ['a key with CR LF and a header line', 'abc\r\nx-injected: 1'],
    ['an empty key', ''],
    ['a key with a space', 'a b'],
  ])('%s is refused before any request is sent', async (_name, key) => {
    const before = server.log.total;
    const error = await refused(client.request('/k', { method: 'POST', body: 'x', idempotencyKey: key }));
    expect(isInvalidOptions(error)).toBe(true);
    expect(server.log.total).toBe(before);
  });

  it("a caller's own deadline header never travels: prazo's (no later than the call's) does", async () => {
    const before = server.log.total;
    const farFuture = String(Date.now() + 3_600_000);
    const sentAt = Date.now();
    const res = await client.request('/d', { headers: { 'X-Deadline-Epoch-Ms': farFuture }, deadline: 500 });
    await res.body.dump();
    const seen = server.log.all.slice(before);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.deadlineHeader).toMatch(/^\d{13}$/);
    expect(Number(seen[0]!.deadlineHeader)).toBeLessThanOrEqual(sentAt + 500 + 50);
  });
});

describe('config files cannot pollute prototypes', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'prazo-pollution-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([
    ['YAML __proto__', 'a.yaml', 'version: 1\n__proto__:\n  polluted: true\n'],
    ['YAML constructor.prototype', 'b.yaml', 'version: 1\nconstructor:\n  prototype:\n    polluted: true\n'],
    [
      'YAML in a dependency',
      'c.yaml',
      'version: 1\ndependencies:\n  - name: x\n    p99Ms: 10\n    __proto__: { polluted: true }\n',
    ],
    ['JSON __proto__', 'd.json', '{"version":1,"__proto__":{"polluted":true}}'],
    [
      'JSON nested',
      'e.json',
      '{"version":1,"dependencies":[{"name":"x","p99Ms":10,"constructor":{"prototype":{"polluted":true}}}]}',
    ],
  ])('%s: refused, naming the key, prototype intact', (_name, file, text) => {
    const path = join(dir, file);
    writeFileSync(path, text);
    let error: unknown;
    try {
      loadConfig(path);
    } catch (e) {
      error = e;
    }
    expect(isInvalidOptions(error)).toBe(true);
    expect((error as Error).message).toMatch(/`(__proto__|constructor|prototype)`.*prototype pollution/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(Object.prototype)).toEqual([]);
  });

  it('a YAML merge key is a plain key (merges are off): nothing reaches a prototype', () => {
    const path = join(dir, 'merge.yaml');
    writeFileSync(path, 'version: 1\nbase: &b { polluted: true }\n<<: *b\ndependencies: []\n');
    try {
      loadConfig(path);
    } catch {
      // refused or loaded: either way, nothing may leak
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(Object.prototype)).toEqual([]);
  });
});
