// After `tsc -p tsconfig.build.json`: the tools (`prazo` CLI, demo, drill, and the mesh export only
// the CLI loads) ship without source maps and without their TypeScript sources. No entry point exports them, nobody steps into them from a
// debugger of their own service, and their maps and sources were a third of the unpacked package
// (test/package/pack.test.ts bounds the download). The library's maps and sources stay.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const TOOLS = ['dist/cli', 'dist/demo', 'dist/drill', 'dist/mesh'];
const MAP_COMMENT = /\n\/\/# sourceMappingURL=[^\n]*\s*$/;

function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else yield path;
  }
}

for (const tool of TOOLS) {
  for (const file of files(tool)) {
    if (file.endsWith('.js.map')) rmSync(file);
    else if (file.endsWith('.js')) {
      const text = readFileSync(file, 'utf8');
      const stripped = text.replace(MAP_COMMENT, '\n');
      if (stripped !== text) writeFileSync(file, stripped);
    }
  }
}
