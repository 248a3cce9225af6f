/**
 * Where the benchmark finds prazo: the built package (`npm test` and `npm run build` write `dist/`),
 * imported by its own name first (`prazo`, `prazo/http`, ... resolve to `dist/` through the package's
 * `exports`, exactly as a user's code would), else straight from the module's folder in `dist/`.
 * A piece that is not built yet makes its variants "skipped" with the reason, never a crash.
 */

export class Unavailable extends Error {
  constructor(message) {
    super(message);
    this.name = 'Unavailable';
  }
}

const cache = new Map();

async function tryImport(specifier) {
  if (!cache.has(specifier)) {
    cache.set(
      specifier,
      import(specifier).catch(() => null),
    );
  }
  return cache.get(specifier);
}

/** Where each export may be found, in order of preference. */
const SOURCES = {
  root: ['prazo'],
  testing: ['prazo/testing', '../../dist/testing/index.js'],
  http: ['prazo/http', '../../dist/http/index.js'],
  otel: ['prazo/otel', '../../dist/otel/index.js'],
  budget: ['prazo', '../../dist/budget/index.js'],
  latency: ['prazo', '../../dist/latency/index.js', '../../dist/latency/recorder.js'],
  dependency: ['prazo', '../../dist/dependency/index.js'],
  hedge: ['prazo', '../../dist/hedge/index.js'],
  retry: ['prazo', '../../dist/retry/index.js'],
  deadline: ['prazo', '../../dist/deadline/index.js'],
  clock: ['../../dist/clock/index.js'],
  // Internal: the instance set behind prazo/http's origins (what a pick costs, not a public API).
  balance: ['../../dist/balance/instances.js', '../../dist/balance/ejection.js'],
  // Internal: the adaptive throttle inside the executor (what its decision costs).
  throttle: ['../../dist/throttle/throttle.js'],
};

/** The export `name` of prazo's `area`, or throws {@link Unavailable}. */
export async function prazo(area, name) {
  const specifiers = SOURCES[area] ?? [];
  for (const specifier of specifiers) {
    const url = specifier.startsWith('.') ? new URL(specifier, import.meta.url).href : specifier;
    const mod = await tryImport(url);
    if (mod && mod[name] !== undefined) return mod[name];
  }
  throw new Unavailable(`${name} (${area}) is not in dist/ yet: run \`npm run build\``);
}

/** Several exports at once: `const { a, b } = await prazoAll('budget', ['a', 'b'])`. */
export async function prazoAll(area, names) {
  const out = {};
  for (const name of names) out[name] = await prazo(area, name);
  return out;
}
