import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startingP99Ms } from '../calibrate/kinds.js';
import { FakeClock } from '../clock/fake.js';
import { createDependency } from '../dependency/dependency.js';
import type { DependencyEvent } from '../dependency/types.js';
import { isInvalidOptions } from '../errors/guards.js';
import { createHttpClient } from '../http/client.js';
import { interceptor } from '../http/interceptor.js';
import { type ConfigChange, ConfigRejectedError, type ConfigWatcher, watchConfig } from './watch.js';
import { ConfigMapVolume, inotifyWatches, waitFor } from './watch.test-helpers.js';

/**
 * `watchConfig` (SPEC X9, C7) on real files and real directory events, with the debounce on a fake
 * clock: a test waits (real time) for the event to arm the debounce timer, then moves the clock.
 */

const FILE = 'prazo.config.yaml';

const config = (inventoryP99: number, more = ''): string => `version: 1
dependencies:
  - name: inventory
    p99Ms: ${inventoryP99}
    attempts: 2
  - name: supplier
    p99Ms: 60
${more}`;

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function setup(initial: string, options: { pollMs?: number; debounceMs?: number } = {}) {
  const volume = new ConfigMapVolume();
  volume.update({ [FILE]: initial });
  const clock = new FakeClock();
  const changes: ConfigChange[] = [];
  const errors: ConfigRejectedError[] = [];
  const watcher = watchConfig(volume.path(FILE), {
    clock,
    pollMs: options.pollMs ?? 0,
    debounceMs: options.debounceMs,
    onChange: (c) => changes.push(c),
    onError: (e) => errors.push(e),
  });
  cleanups.push(() => {
    watcher.close();
    volume.remove();
  });
  const make = (name: string) =>
    createDependency({ ...watcher.config.dependencies.get(name)!.options, clock, recorder: { clock } });
  /** Writes a new payload and moves the clock past the debounce once the event armed it. */
  const publish = async (text: string): Promise<void> => {
    const armed = clock.pendingTimers();
    volume.update({ [FILE]: text });
    await waitFor(() => clock.pendingTimers() > armed, 5_000, 'the directory event');
    clock.advance(25);
  };
  return { volume, clock, watcher, changes, errors, make, publish };
}

describe('watchConfig: a ConfigMap updated by the kubelet (symlink swap of ..data)', () => {
  it('applies a new version in place to a bound executor: same object, new plan, version and event', async () => {
    const { watcher, changes, errors, make, publish } = setup(config(100));
    expect(watcher.version.generation).toBe(1);
    expect(watcher.version.hash).toMatch(/^[0-9a-f]{16}$/);
    const inventory = make('inventory');
    const events: DependencyEvent[] = [];
    inventory.on((e) => events.push(e));
    watcher.bind(inventory);
    expect(inventory.configVersion).toEqual(watcher.version);
    const first = watcher.version;

    await publish(config(200));
    expect(errors).toEqual([]);
    expect(changes).toHaveLength(1);
    expect(inventory.p99Ms).toBe(200);
    expect(inventory.timeouts.responseMs).toBe(280); // ceil(200 × 1.4)
    expect(watcher.version.generation).toBe(2);
    expect(watcher.version.hash).not.toBe(first.hash);
    expect(inventory.configVersion).toEqual(watcher.version);
    const change = changes[0]!;
    expect(change.previousVersion).toEqual(first);
    expect(change.dependencies).toEqual([{ name: 'inventory', keys: ['p99Ms'] }]);
    expect(change.applied).toBe(1);
    expect(events.filter((e) => e.type === 'update')).toEqual([
      expect.objectContaining({ type: 'update', dependency: 'inventory', version: first }),
      expect.objectContaining({ type: 'update', dependency: 'inventory', version: watcher.version }),
    ]);
  });

  it('a measured p99 written over a kind-only entry ends the assumption live, with p99-measured (SPEC C8)', async () => {
    const assumed = config(100).replace('    p99Ms: 60\n', '    kind: same-zone-service\n');
    const { watcher, errors, make, publish } = setup(assumed);
    const supplier = make('supplier');
    const events: DependencyEvent[] = [];
    supplier.on((e) => events.push(e));
    expect(supplier.p99Assumed).toBe(true);
    watcher.bind(supplier);
    await publish(
      assumed.replace('    kind: same-zone-service\n', '    kind: same-zone-service\n    p99Ms: 24\n'),
    );
    expect(errors).toEqual([]);
    expect(supplier.p99Ms).toBe(24);
    expect(supplier.p99Assumed).toBe(false);
    expect(events.filter((e) => e.type === 'p99-measured')).toEqual([
      {
        type: 'p99-measured',
        dependency: 'supplier',
        assumedP99Ms: startingP99Ms('same-zone-service'),
        p99Ms: 24,
      },
    ]);
  });

  it('refuses an invalid version with every problem at its line and keeps the one in force, reported once', async () => {
    const { watcher, changes, errors, make, publish } = setup(config(100));
    const inventory = make('inventory');
    watcher.bind(inventory);
    const bad = config(100).replace('attempts: 2', 'attempts: 0').replace('p99Ms: 60', 'p99Ms: -1');
    await publish(bad);
    expect(changes).toEqual([]);
    expect(errors).toHaveLength(1);
    const error = errors[0]!;
    expect(error).toBeInstanceOf(ConfigRejectedError);
    expect(error.code).toBe('CONFIG_REJECTED');
    expect(error.reason).toBe('invalid');
    expect(error.kept).toEqual(watcher.version);
    expect(error.problems.map((p) => [p.line, p.key])).toEqual([
      [5, 'dependencies[0].attempts'],
      [7, 'dependencies[1].p99Ms'],
    ]);
    expect(error.message).toContain(`${watcher.file}:5:`);
    expect(inventory.p99Ms).toBe(100);
    expect(inventory.configVersion?.generation).toBe(1);
    expect(watcher.check()).toBe('unchanged'); // the same refused content is not reported again
    expect(errors).toHaveLength(1);

    await publish(config(150)); // a good version after a bad one
    expect(inventory.p99Ms).toBe(150);
    expect(watcher.version.generation).toBe(2);
  });

  it('refuses what cannot change live — a dependency added, removed, renamed, its recorder — at its line, nothing applied', async () => {
    const { watcher, errors, make, publish } = setup(config(100));
    const inventory = make('inventory');
    const supplier = make('supplier');
    watcher.bind(inventory, supplier);
    const cases = [
      config(200, '  - name: payments\n    p99Ms: 40\n'),
      config(200).replace(/ {2}- name: supplier\n {4}p99Ms: 60\n/, ''),
      config(200).replace('name: supplier', 'name: suppliers'),
      config(200).replace('attempts: 2', 'attempts: 2\n    recorder: { windowMs: 5000 }'),
    ];
    for (const text of cases) await publish(text);
    expect(errors.map((e) => e.reason)).toEqual(['not-live', 'not-live', 'not-live', 'not-live']);
    const at = errors.map((e) => e.problems.map((p) => `${p.line} ${p.key}`));
    expect(at[0]).toEqual(['8 dependencies[2].name']);
    expect(at[1]).toEqual(['2 dependencies']);
    expect(at[2]).toEqual(['2 dependencies', '6 dependencies[1].name']);
    expect(at[3]).toEqual(['6 dependencies[0].recorder']);
    expect(errors[1]!.problems[0]!.message).toContain('`supplier` is no longer in the file');
    expect(errors[3]!.problems[0]!.message).toContain('cannot change while the service runs');
    // None of the versions was half-applied: inventory's p99 change came with each, and was refused.
    expect(inventory.p99Ms).toBe(100);
    expect(watcher.version.generation).toBe(1);
  });

  it('applies a version to every bound target or to none: a client that refuses its plan stops all', async () => {
    const { watcher, errors, clock, publish } = setup(config(100));
    const entry = (name: string) => watcher.config.dependencies.get(name)!.options;
    const client = createHttpClient({
      ...entry('inventory'),
      origin: 'http://127.0.0.1:9',
      responseTimeoutMs: 130, // below the attempt timeout ceil(100 × 1.4) = 140
      clock,
    });
    cleanups.push(() => void client.destroy());
    const supplier = createDependency({ ...entry('supplier'), clock });
    watcher.bind(client, supplier);
    await publish(config(50).replace('p99Ms: 60', 'p99Ms: 90')); // inventory's timeout would be 70 < 130
    expect(errors).toHaveLength(1);
    expect(errors[0]!.reason).toBe('refused');
    expect(errors[0]!.problems[0]).toMatchObject({ line: 3, key: 'dependencies[0]' });
    expect(errors[0]!.problems[0]!.message).toContain("inventory: the client's `responseTimeoutMs` (130)");
    expect(client.dependency.p99Ms).toBe(100);
    expect(supplier.p99Ms).toBe(60); // its own change was valid, and not applied either
  });

  it('reaches interceptor routes and HTTP clients, whose calls plan with the new numbers', async () => {
    const { watcher, clock, publish } = setup(config(100));
    const entry = watcher.config.dependencies.get('inventory')!.options;
    const routes = interceptor({ dependencies: { 'http://inventory:8080': entry }, clock });
    watcher.bind(routes);
    await publish(config(300));
    expect(routes.dependency('http://inventory:8080')?.p99Ms).toBe(300);
    expect(routes.dependencies()[0]!.timeouts.responseMs).toBe(420);
  });

  it('binds by name only what the file has, and only executors made by prazo', () => {
    const { watcher, clock } = setup(config(100));
    const other = createDependency({ name: 'payments', p99Ms: 10, clock });
    expect(() => watcher.bind(other)).toThrow(/`payments` is not a dependency of .*inventory, supplier/);
    expect(() => watcher.bind({ name: 'inventory' } as never)).toThrow(/a target must be an executor/);
    try {
      watcher.bind(other);
    } catch (error) {
      expect(isInvalidOptions(error)).toBe(true);
    }
  });
});

describe('watchConfig: editors, disappearing files, histograms, leaks', () => {
  const plainFile = (text: string) => {
    const dir = mkdtempSync(join(tmpdir(), 'prazo-watch-'));
    const path = join(dir, FILE);
    writeFileSync(path, text);
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    return { dir, path };
  };

  const watchPlain = (path: string, extra: { pollMs?: number } = {}) => {
    const clock = new FakeClock();
    const changes: ConfigChange[] = [];
    const errors: ConfigRejectedError[] = [];
    const watcher = watchConfig(path, {
      clock,
      pollMs: extra.pollMs ?? 0,
      onChange: (c) => changes.push(c),
      onError: (e) => errors.push(e),
    });
    cleanups.push(() => watcher.close());
    return { clock, changes, errors, watcher };
  };

  it('waits for a multi-step write to go quiet, then reads it once (debounce on the clock)', async () => {
    const { path } = plainFile(config(100));
    const { clock, changes, errors, watcher } = watchPlain(path);
    const text = config(180);
    const armed = clock.pendingTimers();
    writeFileSync(path, ''); // truncate: an invalid (empty) file for an instant
    await waitFor(() => clock.pendingTimers() > armed);
    writeFileSync(path, text.slice(0, 40)); // half a file
    await new Promise((r) => setTimeout(r, 20));
    clock.advance(20); // not quiet for 25 ms yet
    writeFileSync(path, text);
    await new Promise((r) => setTimeout(r, 20));
    expect(changes).toEqual([]);
    clock.advance(25);
    expect(errors).toEqual([]); // the empty and the half file were never read
    expect(changes).toHaveLength(1);
    expect(watcher.config.dependencies.get('inventory')!.options.p99Ms).toBe(180);
  });

  it('reads at most 10 × debounceMs after a burst that never goes quiet', async () => {
    const { path, dir } = plainFile(config(100));
    const { clock, changes } = watchPlain(path);
    writeFileSync(path, config(120));
    for (let i = 0; i < 12; i += 1) {
      await new Promise((r) => setTimeout(r, 10));
      writeFileSync(join(dir, 'noise.log'), `line ${i}\n`); // another file of the directory keeps changing
      await waitFor(() => clock.pendingTimers() > 0);
      clock.advance(24);
    }
    expect(changes).toHaveLength(1); // at 250 ms, with events still arriving every 24 ms
  });

  it("follows an editor's save (write a temporary file, rename it over)", async () => {
    const { path, dir } = plainFile(config(100));
    const { clock, changes, watcher } = watchPlain(path);
    writeFileSync(join(dir, `.${FILE}.swp`), config(140));
    renameSync(join(dir, `.${FILE}.swp`), path);
    await waitFor(() => clock.pendingTimers() > 0);
    clock.advance(25);
    expect(changes).toHaveLength(1);
    expect(watcher.version.generation).toBe(2);
  });

  it('survives the file disappearing (reported once, version kept) and reappearing', async () => {
    const { path } = plainFile(config(100));
    const { clock, changes, errors, watcher } = watchPlain(path);
    const kept = watcher.version;
    rmSync(path);
    await waitFor(() => clock.pendingTimers() > 0);
    clock.advance(25);
    expect(errors.map((e) => e.reason)).toEqual(['missing']);
    expect(errors[0]!.problems[0]).toMatchObject({ line: 0, message: expect.stringContaining('gone') });
    expect(watcher.check()).toBe('missing');
    expect(errors).toHaveLength(1);
    expect(watcher.version).toBe(kept);
    writeFileSync(path, config(100)); // the same content back: nothing to apply
    expect(watcher.check()).toBe('unchanged');
    writeFileSync(path, config(110));
    await waitFor(() => clock.pendingTimers() > 0);
    clock.advance(25);
    expect(changes).toHaveLength(1);
    expect(watcher.version.generation).toBe(2);
  });

  it('finds a change the events missed at the next poll, on the clock', () => {
    const { path } = plainFile(config(100));
    const { clock, changes } = watchPlain(path, { pollMs: 1_000 });
    writeFileSync(path, config(130));
    // Whether or not the event arrived, the poll due at 1 s reads the file.
    clock.advance(1_000);
    expect(changes).toHaveLength(1);
    expect(clock.pendingTimers()).toBe(1); // the next poll
  });

  it('takes a new generation when a histogram file it names changes, the config hash unchanged', () => {
    const { path, dir } = plainFile('');
    const histogram = (slow: number) =>
      `d_bucket{le="50"} ${1000 - slow}\nd_bucket{le="100"} 1000\nd_bucket{le="+Inf"} 1000\nd_count 1000\n`;
    writeFileSync(join(dir, 'h.prom'), histogram(5));
    writeFileSync(path, 'dependencies:\n  - name: supplier\n    histogram: { file: h.prom, unit: ms }\n');
    const { watcher, changes } = watchPlain(path);
    const before = watcher.config.dependencies.get('supplier')!.options.p99Ms;
    writeFileSync(join(dir, 'h.prom'), histogram(50)); // the p99 moves into the upper bucket
    expect(watcher.check()).toBe('applied');
    const after = watcher.config.dependencies.get('supplier')!.options.p99Ms;
    expect(after).toBeGreaterThan(before);
    expect(changes[0]!.version.hash).toBe(changes[0]!.previousVersion.hash);
    expect(changes[0]!.version.generation).toBe(2);
    expect(watcher.check()).toBe('unchanged');
  });

  it('releases every watch and timer on close (counted in /proc, and on the clock)', () => {
    const before = inotifyWatches();
    const volume = new ConfigMapVolume();
    volume.update({ [FILE]: config(100) });
    cleanups.push(() => volume.remove());
    const clock = new FakeClock();
    const watchers = Array.from({ length: 5 }, () =>
      watchConfig(volume.path(FILE), { clock, pollMs: 1_000 }),
    );
    expect(inotifyWatches()).toBeGreaterThan(before);
    for (let i = 0; i < 3; i += 1) volume.update({ [FILE]: config(100 + i) });
    for (const w of watchers) w.check(); // re-arms on the new ..2026_… directory, drops the old one
    expect(inotifyWatches() - before).toBeLessThanOrEqual(10); // two directories per watcher
    for (const w of watchers) w.close();
    for (const w of watchers) w.close(); // idempotent
    expect(inotifyWatches()).toBe(before);
    expect(clock.pendingTimers()).toBe(0);
    expect(watchers[0]!.check()).toBe('unchanged'); // closed: nothing is read, nothing armed
    expect(clock.pendingTimers()).toBe(0);
  });

  it('refuses a file it cannot load at start, as loadConfig does, and bad options together', () => {
    const { path } = plainFile(config(100).replace('attempts: 2', 'attempts: 0'));
    expect(() => watchConfig(path)).toThrow(/prazo\.config\.yaml:5:\d+: error: dependencies\[0\]\.attempts/);
    expect(() => watchConfig(join(path, '..', 'nope.yaml'))).toThrow(/cannot read/);
    expect(() => watchConfig(path, { debounceMS: 10, pollMs: 5 } as never)).toThrow(
      /did you mean `debounceMs`[\s\S]*`pollMs` must be 0 \(no polling\) or at least 100 ms/,
    );
  });

  it('keeps watching when a callback throws', async () => {
    const { path } = plainFile(config(100));
    const clock = new FakeClock();
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    cleanups.push(() => process.off('warning', onWarning));
    const watcher = watchConfig(path, {
      clock,
      pollMs: 0,
      onChange: () => {
        throw new Error('boom');
      },
    });
    cleanups.push(() => watcher.close());
    writeFileSync(path, config(120));
    expect(watcher.check()).toBe('applied');
    writeFileSync(path, config(130));
    expect(watcher.check()).toBe('applied');
    await new Promise((r) => setImmediate(r));
    expect(warnings.filter((w) => w.includes('boom'))).toHaveLength(2);
  });
});

describe('watchConfig: its directory deleted and made again (#24 item 5)', () => {
  /** `<tmp>/prazo-watch-…/conf/prazo.config.yaml`: a directory that can go away, inside one that stays. */
  const inDirectory = (text: string) => {
    const parent = mkdtempSync(join(tmpdir(), 'prazo-watch-'));
    cleanups.push(() => rmSync(parent, { recursive: true, force: true }));
    const dir = join(parent, 'conf');
    mkdirSync(dir);
    const path = join(dir, FILE);
    writeFileSync(path, text);
    return { parent, dir, path };
  };
  const p99Of = (w: ConfigWatcher) => w.config.dependencies.get('inventory')!.options.p99Ms;

  // Before: the poll that found the file back did not re-arm the directory's watch (the dead watch
  // of the deleted directory was still in the map), so every later edit waited for the next poll.
  it('the poll that finds the file back re-arms the watch: an edit after it is seen at its event, not at the next poll (fake clock)', async () => {
    const { dir, path } = inDirectory(config(100));
    const clock = new FakeClock();
    const changes: ConfigChange[] = [];
    const errors: ConfigRejectedError[] = [];
    const watcher = watchConfig(path, {
      clock,
      pollMs: 10_000,
      onChange: (c) => changes.push(c),
      onError: (e) => errors.push(e),
    });
    cleanups.push(() => watcher.close());
    rmSync(dir, { recursive: true });
    await waitFor(() => clock.pendingTimers() > 1, 3_000, 'the event of the deletion'); // the poll + the debounce
    clock.advance(25);
    expect(errors.map((e) => e.reason)).toEqual(['missing']);
    mkdirSync(dir);
    writeFileSync(path, config(110));
    clock.advance(10_000); // the poll reads it back
    expect(p99Of(watcher)).toBe(110);
    await new Promise((r) => setTimeout(r, 100)); // events of the recreation, if any, arrive
    clock.advance(250); // and their reads are done
    expect(changes).toHaveLength(1);
    const armed = clock.pendingTimers(); // the next poll only
    writeFileSync(path, config(150));
    await waitFor(
      () => clock.pendingTimers() > armed,
      3_000,
      'the event of an edit after the directory came back',
    );
    clock.advance(25);
    expect(p99Of(watcher)).toBe(150);
    expect(changes).toHaveLength(2);
  });

  it('on the real clock, the directory made again and every edit after it are in force in well under the poll interval', async () => {
    const { dir, path } = inDirectory(config(100));
    const changes: ConfigChange[] = [];
    const errors: ConfigRejectedError[] = [];
    const watcher = watchConfig(path, {
      pollMs: 10_000,
      onChange: (c) => changes.push(c),
      onError: (e) => errors.push(e),
    });
    cleanups.push(() => watcher.close());
    rmSync(dir, { recursive: true });
    await waitFor(() => errors.length === 1, 3_000, 'the deletion reported');
    expect(errors[0]!.reason).toBe('missing');
    mkdirSync(dir);
    writeFileSync(path, config(110));
    await waitFor(() => p99Of(watcher) === 110, 3_000, 'the recreated file in force');
    for (const p99 of [150, 160]) {
      writeFileSync(path, config(p99));
      await waitFor(() => p99Of(watcher) === p99, 3_000, `the edit to ${p99} in force`);
    }
    expect(changes.map((c) => c.version.generation)).toEqual([2, 3, 4]);
    expect(errors).toHaveLength(1);
  });

  it('a directory deleted and made again before the watcher read anything (same path, new directory) is watched again', async () => {
    const { dir, path } = inDirectory(config(100));
    const clock = new FakeClock();
    const watcher = watchConfig(path, { clock, pollMs: 0 });
    cleanups.push(() => watcher.close());
    rmSync(dir, { recursive: true });
    mkdirSync(dir);
    writeFileSync(path, config(120));
    await waitFor(() => clock.pendingTimers() > 0, 3_000, 'the events of the swap');
    await new Promise((r) => setTimeout(r, 100));
    clock.advance(250);
    expect(p99Of(watcher)).toBe(120);
    await new Promise((r) => setTimeout(r, 100));
    clock.advance(250);
    writeFileSync(path, config(130));
    await waitFor(() => clock.pendingTimers() > 0, 3_000, 'the event of an edit in the new directory');
    clock.advance(25);
    expect(p99Of(watcher)).toBe(130);
  });

  it('watches no more than it needs while the directory is gone, and releases it all on close', async () => {
    const before = inotifyWatches();
    const { dir, path } = inDirectory(config(100));
    const clock = new FakeClock();
    const watcher = watchConfig(path, { clock, pollMs: 0 });
    expect(inotifyWatches() - before).toBe(1);
    rmSync(dir, { recursive: true });
    await waitFor(() => clock.pendingTimers() > 0, 3_000, 'the event of the deletion');
    clock.advance(25);
    expect(inotifyWatches() - before).toBe(1); // the directory above, for the return
    mkdirSync(dir);
    await waitFor(() => clock.pendingTimers() > 0, 3_000, 'the event of the return');
    clock.advance(25);
    expect(inotifyWatches() - before).toBe(1); // the directory again, the one above released
    watcher.close();
    expect(inotifyWatches()).toBe(before);
    expect(clock.pendingTimers()).toBe(0);
  });
});
