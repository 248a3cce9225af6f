import { checkConfigText } from '../../../src/config/index.js';

/**
 * Runs `checkConfigText` on a generated hostile document in its own process, because some inputs
 * kill the process outright (a V8 fatal error cannot be caught): the parent judges the exit.
 * Usage: `node check-child.mjs <shape> <n> [repeat]`; checks the text `repeat` times (default 1) and
 * prints `{ ms, bytes, config, errors, first }` for the last check.
 */
const shapes: Record<string, (n: number) => string> = {
  flowSeq: (n) => '['.repeat(n),
  flowMap: (n) => '{a: '.repeat(n),
  closedSeq: (n) => `${'['.repeat(n)}${']'.repeat(n)}`,
  blockMap: (n) => Array.from({ length: n }, (_, i) => `${' '.repeat(i)}a:`).join('\n'),
  blockSeq: (n) => Array.from({ length: n }, (_, i) => `${' '.repeat(i)}-`).join('\n'),
};
const [shape = 'flowSeq', n = '1000', repeat = '1'] = process.argv.slice(2);
const text = shapes[shape]!(Number(n));
let t0 = 0;
let result = checkConfigText('version: 1');
for (let i = 0; i < Number(repeat); i += 1) {
  t0 = performance.now();
  result = checkConfigText(text);
}
const ms = performance.now() - t0;
const { config, problems } = result;
const errors = problems.filter((p) => p.severity === 'error').length;
const first = problems[0]?.message.slice(0, 100);
process.stdout.write(
  `${JSON.stringify({ ms, bytes: text.length, config: config !== undefined, errors, first })}\n`,
);
