import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * An option is declared once: its TSDoc sits on the spec that holds its default and range, and is
 * what a caller's editor shows. This test keeps the words and the numbers of each declaration
 * together: every number option with a default says `Default <it>`, and one with both bounds says
 * its range (`[1, 10]`, `(0, 60000]`), as written in the spec — so a bound changed in code and not in
 * its doc fails here, not in a user's hands.
 */

const SRC = new URL('../', import.meta.url).pathname;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.includes('test-helpers') ? [path] : [];
  });
}

/** Values of the identifiers specs use for bounds. */
const NAMED: Readonly<Record<string, number>> = { MAX_TIMER_DELAY_MS: 2 ** 31 - 1 };

/** A constant numeric expression of a spec (`10_000`, `2 ** 31 - 1`, `-3_600_000`, `1e6`), or undefined. */
function evaluate(node: ts.Expression): number | undefined {
  if (ts.isNumericLiteral(node)) return Number(node.text);
  if (ts.isPrefixUnaryExpression(node) && node.operator === ts.SyntaxKind.MinusToken) {
    const v = evaluate(node.operand as ts.Expression);
    return v === undefined ? undefined : -v;
  }
  if (ts.isParenthesizedExpression(node)) return evaluate(node.expression);
  if (ts.isIdentifier(node)) return NAMED[node.text];
  if (ts.isBinaryExpression(node)) {
    const [a, b] = [evaluate(node.left), evaluate(node.right)];
    if (a === undefined || b === undefined) return undefined;
    if (node.operatorToken.kind === ts.SyntaxKind.AsteriskAsteriskToken) return a ** b;
    if (node.operatorToken.kind === ts.SyntaxKind.MinusToken) return a - b;
    if (node.operatorToken.kind === ts.SyntaxKind.PlusToken) return a + b;
    if (node.operatorToken.kind === ts.SyntaxKind.AsteriskToken) return a * b;
  }
  return undefined;
}

/** How a doc may write `n`: 2147483647 as 2^31-1, 1000000 as 10^6, and digits as they are. */
function spellings(n: number): string[] {
  const out = [String(n)];
  if (n === 2 ** 31 - 1) out.push('2^31-1');
  if (n === -(2 ** 31 - 1)) out.push('-2^31-1');
  const exp = Math.log10(Math.abs(n));
  if (Number.isInteger(exp) && exp >= 6) out.push(`${n < 0 ? '-' : ''}10^${exp}`);
  return out;
}

interface Declared {
  readonly where: string;
  readonly doc: string;
  readonly defaultValue: number | undefined;
  readonly min: number | undefined;
  readonly max: number | undefined;
  readonly exclusiveMin: boolean;
}

/** Every `key: option.number({...})` / `option.integer({...})` with a TSDoc, in the sources. */
function declarations(): Declared[] {
  const out: Declared[] = [];
  for (const file of sources(SRC)) {
    const text = readFileSync(file, 'utf8');
    if (!text.includes('option.number(') && !text.includes('option.integer(')) continue;
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
    const visit = (node: ts.Node): void => {
      if (
        ts.isPropertyAssignment(node) &&
        ts.isCallExpression(node.initializer) &&
        /^option\.(number|integer)$/.test(node.initializer.expression.getText(sf)) &&
        ts.isObjectLiteralExpression(node.initializer.arguments[0]!)
      ) {
        const doc = ts
          .getJSDocCommentsAndTags(node)
          .map((d) => d.getText(sf))
          .join('\n')
          .replace(/\n\s*\*\s?/g, ' ')
          .replace(/(\d)_(?=\d)/g, '$1');
        const init = node.initializer.arguments[0] as ts.ObjectLiteralExpression;
        const field = (name: string): ts.Expression | undefined =>
          (
            init.properties.find(
              (p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && p.name.getText(sf) === name,
            ) as ts.PropertyAssignment | undefined
          )?.initializer;
        const exclusive = field('exclusiveMin');
        const at = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
        const dv = field('default');
        const mn = field('min');
        const mx = field('max');
        out.push({
          where: `${relative(SRC, file)}:${at} ${node.name.getText(sf)}`,
          doc,
          defaultValue: dv === undefined ? undefined : evaluate(dv),
          min: mn === undefined ? undefined : evaluate(mn),
          max: mx === undefined ? undefined : evaluate(mx),
          exclusiveMin: exclusive !== undefined && exclusive.kind === ts.SyntaxKind.TrueKeyword,
        });
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return out;
}

describe('each option documents its default and range, as declared (src/options)', () => {
  const found = declarations();

  it('finds the declarations', () => {
    expect(found.length).toBeGreaterThan(45);
  });

  it('says `Default <n>` for every number option with a default, the number the spec holds', () => {
    const wrong = found
      .filter((d) => d.defaultValue !== undefined)
      .filter(
        (d) => !spellings(d.defaultValue!).some((s) => new RegExp(`Default ${literal(s)}\\b`).test(d.doc)),
      )
      .map((d) => `${d.where}: Default ${d.defaultValue} not said in "${d.doc.slice(0, 120)}"`);
    expect(wrong).toEqual([]);
  });

  it('says the range of every number option with both bounds, as the spec holds it', () => {
    const wrong = found
      .filter((d) => d.min !== undefined && d.max !== undefined)
      .filter((d) => {
        const open = d.exclusiveMin ? '(' : '[';
        return !spellings(d.min!).some((lo) =>
          spellings(d.max!).some((hi) => d.doc.includes(`${open}${lo}, ${hi}]`)),
        );
      })
      .map(
        (d) =>
          `${d.where}: ${d.exclusiveMin ? '(' : '['}${d.min}, ${d.max}] not said in "${d.doc.slice(0, 140)}"`,
      );
    expect(wrong).toEqual([]);
  });
});

function literal(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
