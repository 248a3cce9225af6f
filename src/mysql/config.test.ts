import { describe, expect, it } from 'vitest';
import { checkConfigText } from '../config/load.js';
import { redisOptionsFrom } from '../redis/client.js';
import { mysqlOptionsFrom } from './pool.js';

/** `store:` entries of prazo.config.yaml, read with the declarations, into the store options (#17 item 4). */
const text = `
dependencies:
  - name: orders-db
    p99Ms: 40
    mesh: false
    store: { kind: mariadb, cancelGraceMs: 80 }
  - name: cache
    p99Ms: 3
    store: { kind: redis, blockMarginMs: 120 }
`;

describe('store entries in prazo.config.yaml', () => {
  it('gives each store integration its options from the entry', () => {
    const { config, problems } = checkConfigText(text);
    expect(problems).toEqual([]);
    const orders = config!.dependencies.get('orders-db')!;
    expect(orders.store).toEqual({ kind: 'mariadb', cancelGraceMs: 80 });
    expect(orders.options).not.toHaveProperty('store'); // not an executor option
    expect(mysqlOptionsFrom(orders)).toEqual({
      name: 'orders-db',
      p99Ms: 40,
      cancelGraceMs: 80,
      server: 'mariadb',
    });
    expect(redisOptionsFrom(config!.dependencies.get('cache')!)).toEqual({
      name: 'cache',
      p99Ms: 3,
      blockMarginMs: 120,
    });
    expect(() => mysqlOptionsFrom(config!.dependencies.get('cache')!)).toThrow(/not a MySQL store/);
    expect(() => redisOptionsFrom(orders)).toThrow(/not a Redis store/);
  });

  it("passes the entry's throttle to the store: switched off, or its options (issue 23)", () => {
    const { config, problems } = checkConfigText(`
dependencies:
  - name: orders-db
    p99Ms: 40
    throttle: { k: 3, minRequests: 20 }
    store: { kind: mysql }
  - name: cache
    p99Ms: 3
    throttle: false
    store: { kind: redis }
`);
    expect(problems).toEqual([]);
    expect(mysqlOptionsFrom(config!.dependencies.get('orders-db')!)).toMatchObject({
      throttle: { k: 3, minRequests: 20 },
    });
    expect(redisOptionsFrom(config!.dependencies.get('cache')!)).toMatchObject({ throttle: false });
  });

  it('refuses a misspelt key, an unknown kind and an out-of-range grace, at their lines', () => {
    const bad = `
dependencies:
  - name: orders-db
    p99Ms: 40
    store: { kind: oracle, cancelGrace: 10, blockMarginMs: -1 }
  - name: cache
    p99Ms: 3
    store: { cancelGraceMs: 10 }
`;
    const { config, problems } = checkConfigText(bad);
    expect(config).toBeUndefined();
    const said = problems.map((p) => `${p.line} ${p.key}: ${p.message}`);
    expect(said).toEqual([
      '5 dependencies[0].store.kind: must be one of mysql, mariadb, redis, postgres, got "oracle"',
      '5 dependencies[0].store.cancelGrace: unknown key; did you mean `cancelGraceMs`?',
      '5 dependencies[0].store.blockMarginMs: must be a finite number in [0, 10000], got -1',
      '8 dependencies[1].store.kind: is required',
    ]);
  });
});
