// Import smoke of every entry point of the package (SPEC P1, P2; issue 13): for each subpath of
// package.json's `exports`, `import()` and `require()` of `prazo/<subpath>` must both load, export
// something, and agree on the names. The package resolves itself by name (Node's self-reference
// through `exports`), so the very map a consumer's `node_modules/prazo` would use is what is tested,
// on whichever Node runs this script. `require()` of an ES module works unflagged from Node 20.19 and
// 22.12 (the lines `engines` admits); before that, or with an export map that has only an `import`
// condition, it fails here, as it would for a CommonJS consumer.
//
// Output: one line per check, then `@@smoke passed=N failed=M` for `.ci/matrix`; exit 1 on a failure.
// Run it after `npm run build` (it loads `dist/`): `node .ci/import-smoke.mjs`.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const require = createRequire(import.meta.url);
const subpaths = Object.keys(manifest.exports ?? { '.': manifest.main }).filter((k) => !k.endsWith('.json'));
const specifiers = subpaths.map((k) => (k === '.' ? manifest.name : `${manifest.name}/${k.slice(2)}`));

let passed = 0;
let failed = 0;
const check = async (what, run) => {
  try {
    const detail = await run();
    passed += 1;
    console.log(`  ok    ${what}: ${detail}`);
  } catch (error) {
    failed += 1;
    const message = String(error?.code ? `${error.code}: ${error.message}` : (error?.message ?? error));
    console.log(`  FAIL  ${what}: ${message.split('\n')[0]}`);
  }
};
const names = (namespace) =>
  Object.keys(namespace)
    .filter((k) => k !== 'default' && k !== '__esModule' && k !== 'module.exports')
    .sort();

console.log(`import smoke on Node ${process.version}: ${specifiers.length} entry points, import and require`);
for (const specifier of specifiers) {
  let imported = [];
  await check(`import('${specifier}')`, async () => {
    imported = names(await import(specifier));
    if (imported.length === 0) throw new Error('loads, but exports nothing');
    return `${imported.length} exports`;
  });
  await check(`require('${specifier}')`, () => {
    const required = names(require(specifier));
    if (required.length === 0) throw new Error('loads, but exports nothing');
    const missing = imported.filter((n) => !required.includes(n));
    const extra = required.filter((n) => !imported.includes(n));
    if (missing.length + extra.length > 0) {
      throw new Error(
        `exports differ from import(): missing ${missing.join(', ') || '-'}; extra ${extra.join(', ') || '-'}`,
      );
    }
    return `${required.length} exports, the same names as import()`;
  });
}
console.log(`@@smoke passed=${passed} failed=${failed}`);
process.exitCode = failed > 0 ? 1 : 0;
