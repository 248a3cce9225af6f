import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from './cli.test-helpers.js';
import { replaceFile } from './files.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tmp = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'prazo-files-'));
  dirs.push(d);
  return d;
};
const temporaries = (dir: string): string[] => readdirSync(dir).filter((f) => f.endsWith('.tmp'));

describe('replaceFile: every file the CLI writes', () => {
  it('Was a defect: a failed rename or write left the temporary file beside the target', () => {
    const dir = mkdtempSync(join(tmpdir(), 'prazo-replace-'));
    try {
      // The rename fails: the target is a non-empty directory.
      const target = join(dir, 'prazo.config.yaml');
      mkdirSync(target);
      writeFileSync(join(target, 'inside'), 'x');
      expect(() => replaceFile(target, 'version: 1\n')).toThrow(/EISDIR|ENOTEMPTY|EEXIST|EPERM/);
      expect(temporaries(dir)).toEqual([]);
      // The producer of the text throws: nothing written, the target as it was.
      const file = join(dir, 'other.yaml');
      writeFileSync(file, 'before\n');
      expect(() =>
        replaceFile(file, () => {
          throw new Error('no text');
        }),
      ).toThrow('no text');
      expect(temporaries(dir)).toEqual([]);
      expect(readFileSync(file, 'utf8')).toBe('before\n');
      // And the way it works: replaced, nothing left over.
      replaceFile(file, () => 'after\n');
      expect(readFileSync(file, 'utf8')).toBe('after\n');
      expect(readdirSync(dir).sort()).toEqual(['other.yaml', 'prazo.config.yaml']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it('creates a file that is not there yet, through the same temporary file (rules and manifests are new files)', () => {
    const dir = tmp();
    const file = join(dir, 'prazo-alerts.yaml');
    replaceFile(file, 'groups: []\n');
    expect(readFileSync(file, 'utf8')).toBe('groups: []\n');
    expect(temporaries(dir)).toEqual([]);
  });

  it('replaces by a rename: a reader that opened the old file reads it whole, the path then holds the new one', () => {
    const dir = tmp();
    const file = join(dir, 'prazo-alerts.yaml');
    writeFileSync(file, 'old\n');
    const before = statSync(file).ino;
    replaceFile(file, 'new\n');
    expect(statSync(file).ino).not.toBe(before); // written in place, a reader would see it half-written
    expect(readFileSync(file, 'utf8')).toBe('new\n');
  });

  it('prazo rules --out and prazo export --out replace their files the same way, and a failed write leaves no temporary', async () => {
    const out = tmp();
    const example = new URL('../../examples/prazo.config.yaml', import.meta.url).pathname;
    const rules = ['rules', '--config', example, '--out', out];
    const manifests = ['export', '--config', example, '--to', 'envoy', '--out', out];
    expect((await runCli(rules)).code).toBe(0);
    expect((await runCli(manifests)).code).toBe(0);
    const inodes = (): number[] =>
      readdirSync(out)
        .sort()
        .map((f) => statSync(join(out, f)).ino);
    const first = inodes();
    expect((await runCli(rules)).code).toBe(0);
    expect((await runCli(manifests)).code).toBe(0);
    const second = inodes();
    expect(second).toHaveLength(first.length);
    for (let i = 0; i < first.length; i += 1) expect(second[i]).not.toBe(first[i]);
    // One of the targets turned into a non-empty directory: the command fails, nothing left beside it.
    rmSync(join(out, 'envoy-route.yaml'));
    mkdirSync(join(out, 'envoy-route.yaml'));
    writeFileSync(join(out, 'envoy-route.yaml', 'inside'), 'x');
    expect((await runCli(manifests)).code).toBe(2);
    expect(temporaries(out)).toEqual([]);
  });
});
