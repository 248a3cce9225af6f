import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO, readSurfaces } from './api-report.js';

/**
 * The texts users read stay true (SPEC P3, P4):
 * - every `SPEC Xn` tag in the repository names a requirement defined in docs/requirements.md;
 * - the README's links work on the npm page (absolute, into this repository) and point at files
 *   that exist; the docs' relative links point at files that exist;
 * - every `import { ... } from 'prazo...'` shown in the README and the docs names what that entry
 *   point really exports.
 */

/** The repository's one public home (an assumption of this repository: no remote is configured). */
const HOME = 'https://github.com/prazo-dev/prazo';
const REPO_LINK = new RegExp(`^${HOME.replace(/[.]/g, '\\.')}/(blob|tree)/main/([^#?]*)`);

const SKIP = new Set(['node_modules', 'dist', '.git', '.tmp', 'coverage', 'api']);
const TEXT = /\.(ts|mjs|js|md|ya?ml|json|proto|sh)$|^run$/;

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (SKIP.has(name) || name === 'package-lock.json') return [];
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return walk(path);
    return TEXT.test(name) ? [path] : [];
  });
}

const files = walk(REPO);
const read = (path: string): string => readFileSync(path, 'utf8');

const REQUIREMENTS = join(REPO, 'docs/requirements.md');
const defined = [...read(REQUIREMENTS).matchAll(/^- \*\*([A-Z])(\d+)\*\*/gm)].map((m) => `${m[1]}${m[2]}`);

/** `SPEC D4`, `SPEC R1–R7`, `SPEC C1-C3, V1`, `SPEC H1–H3, D7` → the ids they name. */
function tagged(text: string): { tag: string; ids: string[] }[] {
  const tags: { tag: string; ids: string[] }[] = [];
  const TAG = /\bSPEC:? +([A-Z]\d+(?:\s*[–-]\s*[A-Z]?\d+)?(?:,\s*[A-Z]\d+(?:\s*[–-]\s*[A-Z]?\d+)?)*)/g;
  for (const m of text.matchAll(TAG)) {
    const ids: string[] = [];
    for (const part of m[1]!.split(/,\s*/)) {
      const range = /^([A-Z])(\d+)\s*[–-]\s*([A-Z])?(\d+)$/.exec(part);
      if (range === null) {
        ids.push(part);
        continue;
      }
      const [, letter, from, to, last] = range;
      if (to !== undefined && to !== letter) ids.push(`${to}${last}`, `(a range across letters: ${part})`);
      for (let n = Number(from); n <= Number(last); n += 1) ids.push(`${letter}${n}`);
      if (Number(last) < Number(from)) ids.push(`(an empty range: ${part})`);
    }
    tags.push({ tag: m[0], ids });
  }
  return tags;
}

/** Markdown links `[text](target)` outside code, with their line. */
function links(markdown: string): { target: string; line: number }[] {
  const out: { target: string; line: number }[] = [];
  let fenced = false;
  markdown.split('\n').forEach((text, i) => {
    if (/^\s*```/.test(text)) fenced = !fenced;
    if (fenced) return;
    const bare = text.replace(/`[^`]*`/g, '');
    for (const m of bare.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g))
      out.push({ target: m[1]!, line: i + 1 });
  });
  return out;
}

describe('requirement tags point at docs/requirements.md (SPEC P3)', () => {
  it('defines each requirement once, in the project’s own file', () => {
    expect(defined.length).toBeGreaterThanOrEqual(46);
    expect(new Set(defined).size).toBe(defined.length);
    for (const id of ['C1', 'C7', 'B3', 'R7', 'D8', 'H3', 'V4', 'X10', 'P4']) expect(defined).toContain(id);
  });

  it('finds the tags everywhere they are written, and each names a defined requirement', () => {
    const unknown: string[] = [];
    let count = 0;
    for (const file of files) {
      for (const { tag, ids } of tagged(read(file))) {
        count += 1;
        for (const id of ids)
          if (!defined.includes(id)) unknown.push(`${relative(REPO, file)}: "${tag}" → ${id}`);
      }
    }
    expect(count).toBeGreaterThan(300);
    expect(unknown).toEqual([]);
  });

  it('reads ranges and lists the way they are written', () => {
    // Built from parts so that this file does not carry the tags it tests.
    const spec = (ids: string): string => ['SPEC', ids].join(' ');
    expect(tagged(`(${spec('R1–R3, D7')}) and ${spec('C2')}`).map((t) => t.ids)).toEqual([
      ['R1', 'R2', 'R3', 'D7'],
      ['C2'],
    ]);
    expect(tagged(spec('H1-H3')).map((t) => t.ids)).toEqual([['H1', 'H2', 'H3']]);
    expect(tagged(spec('Q9'))[0]!.ids).toEqual(['Q9']); // and Q9 is not defined: the test above would fail
  });

  it('never points readers at a file outside the repository', () => {
    const outside = files.filter((f) => /\bSPEC\.md\b|\/work\/shared|\bshared\/seeds\b/.test(read(f)));
    expect(outside.map((f) => relative(REPO, f))).toEqual([]);
  });
});

describe('links that work where they are read (SPEC P3)', () => {
  const readme = read(join(REPO, 'README.md'));

  it('README: every link into the repository is absolute (the npm page has no repository files)', () => {
    const relativeLinks = links(readme).filter((l) => !/^(https?:|mailto:|#)/.test(l.target));
    expect(relativeLinks.map((l) => `README.md:${l.line} ${l.target}`)).toEqual([]);
    expect(links(readme).filter((l) => REPO_LINK.test(l.target)).length).toBeGreaterThan(10);
  });

  it('README and docs: every link into the repository names a file or folder that exists', () => {
    const markdown = files.filter((f) => f.endsWith('.md'));
    const dead: string[] = [];
    for (const file of markdown) {
      for (const { target, line } of links(read(file))) {
        const absolute = REPO_LINK.exec(target);
        let path: string | undefined;
        if (absolute !== null) path = join(REPO, decodeURIComponent(absolute[2]!));
        else if (!/^(https?:|mailto:|#)/.test(target))
          path = normalize(join(dirname(file), decodeURIComponent(target.split('#')[0]!)));
        if (path === undefined) continue;
        const kind = absolute?.[1];
        const ok =
          existsSync(path) &&
          path.startsWith(REPO) &&
          (kind === undefined || (kind === 'tree') === statSync(path).isDirectory());
        if (!ok) dead.push(`${relative(REPO, file)}:${line} ${target}`);
      }
    }
    expect(dead).toEqual([]);
  });

  it('package.json names the same home as the README links', () => {
    const pkg = JSON.parse(read(join(REPO, 'package.json'))) as {
      repository: { url: string };
      homepage: string;
      bugs: { url: string };
    };
    expect(pkg.repository.url).toBe(`git+${HOME}.git`);
    expect(pkg.homepage).toBe(`${HOME}#readme`);
    expect(pkg.bugs.url).toBe(`${HOME}/issues`);
  });
});

describe('code shown in the README and the docs imports what the entry points export (SPEC P4)', () => {
  const surfaces = new Map(
    readSurfaces().map((s) => [s.entry.specifier, new Set(s.names.map((n) => n.name))]),
  );
  const markdown = files.filter((f) => f.endsWith('.md') && !f.includes(`${REPO}bench`));

  it('every named import from prazo exists in that entry point', () => {
    const wrong: string[] = [];
    let count = 0;
    for (const file of markdown) {
      const text = read(file).replace(/^> ?/gm, '');
      for (const m of text.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'(prazo(?:\/[a-z]+)?)'/g)) {
        count += 1;
        const names = surfaces.get(m[2]!);
        if (names === undefined) {
          wrong.push(`${relative(REPO, file)}: no entry point ${m[2]}`);
          continue;
        }
        for (const raw of m[1]!.split(',')) {
          const name = raw
            .trim()
            .replace(/^type\s+/, '')
            .split(/\s+as\s+/)[0]!;
          if (name !== '' && !names.has(name)) wrong.push(`${relative(REPO, file)}: ${name} from ${m[2]}`);
        }
      }
    }
    expect(count).toBeGreaterThan(10);
    expect(wrong).toEqual([]);
  });
});
