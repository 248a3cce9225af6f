import { spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundleForNode } from '../netns/bundle.js';

/**
 * Hostile shapes of prazo.config.yaml, each checked in a child process: a V8 fatal error (what deep
 * flow nesting triggers inside the `yaml` parser) kills the process and cannot be caught, so running
 * it here would take the test worker down with it. Every shape must come back as problems, exit 0,
 * at a bounded cost (SPEC C7; issue 10: never a crash, never a hang).
 */

interface ChildOut {
  readonly ms: number;
  readonly bytes: number;
  readonly config: boolean;
  readonly errors: number;
  readonly first?: string;
}

let script: string;
beforeAll(async () => {
  script = await bundleForNode(new URL('./check-child.ts', import.meta.url).pathname, 'config-check');
}, 60_000);

function check(
  shape: string,
  n: number,
  repeat = 1,
): { status: number | null; out?: ChildOut; fatal: string } {
  const r = spawnSync(process.execPath, [script, shape, String(n), String(repeat)], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  const fatal = r.stderr.split('\n').find((l) => /FATAL|RangeError|Error:/.test(l)) ?? '';
  const line = r.stdout.trim();
  return { status: r.status, fatal, ...(line ? { out: JSON.parse(line) as ChildOut } : {}) };
}

describe('prazo.config.yaml: hostile nesting', () => {
  it.each([
    ['flowSeq', 2_000],
    ['flowMap', 2_000],
    ['blockMap', 1_400],
    ['blockSeq', 1_400],
  ])('%s × %i: problems reported, process alive', (shape, n) => {
    const r = check(shape, n, 3);
    expect(r.fatal).toBe('');
    expect(r.status).toBe(0);
    expect(r.out?.config).toBe(false);
    expect(r.out?.errors).toBeGreaterThan(0);
  });

  it('20,000 nested "[" checked three times: problems reported, process alive', () => {
    // Before the fix the second parse died with "FATAL ERROR: RegExpCompiler Allocation failed -
    // process out of memory" inside yaml's parseDocument; src/config/document.ts now refuses flow
    // nesting deeper than CONFIG_LIMITS.maxDepth, measured by the yaml lexer before parsing.
    const r = check('flowSeq', 20_000, 3);
    expect(r.fatal).toBe('');
    expect(r.status).toBe(0);
    expect(r.out?.errors).toBeGreaterThan(0);
  });

  it('1 MB of nested "[" (under the size limit) is refused in under a second', () => {
    // Before the fix: about 7 s in yaml's parser before it gave up on the depth.
    const r = check('flowSeq', 1_000_000);
    expect(r.status).toBe(0);
    expect(r.out!.ms).toBeLessThan(1_000);
  });
});
