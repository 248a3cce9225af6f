import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/**
 * The public surface of each entry point, read from the built declarations (`dist/**.d.ts`), the files a
 * user's TypeScript reads: every exported name with its declaration, comments stripped, sorted. The
 * checked-in reports (`api/*.api.md`) are compared with it by `api-report.test.ts`, so a change of the
 * surface shows up as a diff in review; `npm run api:update` rewrites them.
 */

export const REPO = new URL('../../', import.meta.url).pathname;

export interface EntryPoint {
  /** `prazo`, `prazo/http`, ... */
  readonly specifier: string;
  /** `root`, `http`, ... (the report's file name). */
  readonly id: string;
  /** The entry's declaration file, relative to the repository. */
  readonly types: string;
  /** The entry's runtime file, relative to the repository. */
  readonly runtime: string;
}

interface ExportTarget {
  readonly types?: string;
  readonly default?: string;
  readonly import?: string;
  readonly require?: string;
}

/** Every entry point `package.json` exports (its `./package.json` aside). */
export function entryPoints(): EntryPoint[] {
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
    name: string;
    exports: Record<string, string | ExportTarget>;
  };
  return Object.entries(pkg.exports)
    .filter(([, target]) => typeof target !== 'string')
    .map(([subpath, target]) => {
      const t = target as ExportTarget;
      const sub = subpath.replace(/^\.\/?/, '');
      return {
        specifier: sub === '' ? pkg.name : `${pkg.name}/${sub}`,
        id: sub === '' ? 'root' : sub.replace(/\//g, '-'),
        types: (t.types ?? '').replace(/^\.\//, ''),
        runtime: (t.default ?? t.import ?? t.require ?? '').replace(/^\.\//, ''),
      };
    });
}

export interface ExportedName {
  readonly name: string;
  /** `class`, `function`, `const`, `interface`, `type`, `enum`, `namespace`. */
  readonly kind: string;
  /** True when the name exists at run time (not a type only). */
  readonly value: boolean;
  /** The declaration(s), as a user's TypeScript sees them. */
  readonly text: string;
}

export interface EntrySurface {
  readonly entry: EntryPoint;
  readonly names: readonly ExportedName[];
  /**
   * prazo's own types that this entry's declarations mention but no entry point exports (API
   * Extractor's "forgotten export"): a user sees them in a signature and cannot import them.
   */
  readonly unexported: readonly string[];
  /** `declare module '...'` augmentations of other packages' types in the entry's own file. */
  readonly augmentations: readonly string[];
}

const printer = ts.createPrinter({ removeComments: true, newLine: ts.NewLineKind.LineFeed });

function kindOf(decl: ts.Declaration): string {
  if (ts.isClassDeclaration(decl)) return 'class';
  if (ts.isFunctionDeclaration(decl)) return 'function';
  if (ts.isInterfaceDeclaration(decl)) return 'interface';
  if (ts.isTypeAliasDeclaration(decl)) return 'type';
  if (ts.isEnumDeclaration(decl)) return 'enum';
  if (ts.isModuleDeclaration(decl)) return 'namespace';
  if (ts.isVariableDeclaration(decl)) return 'const';
  return ts.SyntaxKind[decl.kind];
}

/** A declaration without `export`/`declare`, printed from its own file (comments stripped). */
function printDeclaration(decl: ts.Declaration, exportedAs: string): string {
  const node: ts.Node = ts.isVariableDeclaration(decl) ? decl.parent.parent : decl;
  const file = node.getSourceFile();
  let text = printer.printNode(ts.EmitHint.Unspecified, node, file);
  text = text.replace(/^(export\s+)?(declare\s+)?/, '');
  const declared = ts.getNameOfDeclaration(decl)?.getText(file);
  return declared !== undefined && declared !== exportedAs ? `${text}\n// exported as ${exportedAs}` : text;
}

/** Reads the surface of every entry point from the built declarations. */
export function readSurfaces(entries: readonly EntryPoint[] = entryPoints()): EntrySurface[] {
  const files = entries.map((e) => join(REPO, e.types));
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    types: ['node'],
    noEmit: true,
    skipLibCheck: true,
  });
  const checker = program.getTypeChecker();
  const resolve = (symbol: ts.Symbol): ts.Symbol =>
    symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  const exportsOf = entries.map((entry) => {
    const file = program.getSourceFile(join(REPO, entry.types));
    if (file === undefined)
      throw new Error(`${entry.specifier}: ${entry.types} not found (run npm run build)`);
    const moduleSymbol = checker.getSymbolAtLocation(file);
    return moduleSymbol === undefined ? [] : checker.getExportsOfModule(moduleSymbol);
  });
  const published = new Set(exportsOf.flat().map(resolve));
  const ownFile = (decl: ts.Declaration): boolean =>
    decl.getSourceFile().fileName.startsWith(join(REPO, 'dist/'));

  /** prazo's own named types a declaration refers to that no entry exports. */
  const unexportedIn = (decl: ts.Declaration, found: Set<string>): void => {
    const visit = (node: ts.Node): void => {
      const name = ts.isTypeReferenceNode(node)
        ? node.typeName
        : ts.isExpressionWithTypeArguments(node)
          ? node.expression
          : ts.isTypeQueryNode(node)
            ? node.exprName
            : undefined;
      if (name !== undefined) {
        const at = ts.isQualifiedName(name)
          ? name.right
          : ts.isPropertyAccessExpression(name)
            ? name.name
            : name;
        const symbol = checker.getSymbolAtLocation(at);
        if (symbol !== undefined && !(symbol.flags & ts.SymbolFlags.TypeParameter)) {
          const target = resolve(symbol);
          const decls = target.getDeclarations() ?? [];
          if (decls.length > 0 && decls.every(ownFile) && !published.has(target)) {
            const from = relative(REPO, decls[0]!.getSourceFile().fileName);
            found.add(`${target.getName()} (${from})`);
          }
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(decl);
  };

  return entries.map((entry, i) => {
    const unexported = new Set<string>();
    const names = exportsOf[i]!.map((symbol): ExportedName => {
      const target = resolve(symbol);
      const decls = target.getDeclarations() ?? [];
      const name = symbol.getName();
      for (const d of decls) unexportedIn(d, unexported);
      return {
        name,
        kind: decls.length > 0 ? kindOf(decls[0]!) : 'unknown',
        value: (target.flags & ts.SymbolFlags.Value) !== 0,
        text: decls.map((d) => printDeclaration(d, name)).join('\n'),
      };
    }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const file = program.getSourceFile(join(REPO, entry.types))!;
    const augmentations = file.statements
      .filter((st): st is ts.ModuleDeclaration => ts.isModuleDeclaration(st) && ts.isStringLiteral(st.name))
      .map((st) => printer.printNode(ts.EmitHint.Unspecified, st, file));
    return { entry, names, unexported: [...unexported].sort(), augmentations };
  });
}

/** The report of one entry point, as checked in under `api/`. */
export function renderReport(surface: EntrySurface): string {
  const { entry, names } = surface;
  const values = names.filter((n) => n.value).length;
  const lines = [
    `# API report: \`${entry.specifier}\``,
    '',
    'Generated from the built declarations by `test/package/api-report.ts`; `npm test` compares it.',
    'After an intended change of the surface, run `npm run api:update` and commit the diff.',
    '',
    `${names.length} name${names.length === 1 ? '' : 's'}: ${values} value${values === 1 ? '' : 's'}, ${names.length - values} type${names.length - values === 1 ? '' : 's'} only.`,
    '',
    '```ts',
    ...names.map((n) => `// ${n.name} (${n.kind})\n${n.text}\n`),
    '```',
    '',
    ...(surface.augmentations.length === 0
      ? []
      : ['## Augments', '', '```ts', ...surface.augmentations, '```', '']),
    '## Mentioned but not exported',
    '',
    surface.unexported.length === 0
      ? 'None: every prazo type these declarations name can be imported from an entry point.'
      : 'Types these declarations name that no entry point exports (a user sees them, cannot import them):',
    '',
    ...surface.unexported.map((u) => `- ${u}`),
    '',
  ];
  return lines.join('\n');
}
