import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where the service processes' entry point is. Services always run from the built `dist/` files
 * (`prazo demo` ships in the package and runs from there); when this module itself runs from the
 * TypeScript sources (vitest), the built twin under `dist/` is used, so tests need a build first
 * (`npm test` builds before running vitest).
 */
export function serviceEntry(moduleUrl: string = import.meta.url): string {
  const here = fileURLToPath(moduleUrl);
  const dir = dirname(here);
  const entry = here.endsWith('.ts')
    ? join(dir, '..', '..', '..', 'dist', 'demo', 'services', 'main.js')
    : join(dir, '..', 'services', 'main.js');
  if (!existsSync(entry)) {
    throw new Error(`prazo demo: service entry ${entry} is missing; build the package first (npm run build)`);
  }
  return entry;
}
