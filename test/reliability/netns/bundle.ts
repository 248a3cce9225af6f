import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { build } from 'vite';

/**
 * Bundles a TypeScript entry of this repository into one ESM file a plain `node` child can run
 * (prazo's sources included, npm packages left external and resolved from the repository's
 * node_modules). Used where a test must run prazo in another process: inside a network namespace, or
 * with `--expose-gc`. Output goes to `.tmp/` (ignored by git).
 */
export async function bundleForNode(entry: string, name: string): Promise<string> {
  const outDir = resolve(import.meta.dirname, '../../../.tmp/reliability');
  mkdirSync(outDir, { recursive: true });
  await build({
    configFile: false,
    logLevel: 'silent',
    build: {
      ssr: entry,
      outDir,
      emptyOutDir: false,
      minify: false,
      target: 'node20',
      rollupOptions: { output: { format: 'esm', entryFileNames: `${name}.mjs` } },
    },
  });
  return resolve(outDir, `${name}.mjs`);
}
