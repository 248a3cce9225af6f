import { Document, type ScalarTag, visit } from 'yaml';
import type { PrazoConfig } from '../config/load.js';
import { defineOptions, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import { targetProblems } from './conflicts.js';
import { renderEnvoy } from './envoy.js';
import { GATEWAY_CHANNELS, type GatewayChannel, renderGatewayApi } from './gateway-api.js';
import { renderGrpc } from './grpc.js';
import { renderIstio } from './istio.js';
import { renderLinkerd } from './linkerd.js';
import { type MeshPolicy, type MeshProblem, type MeshRendering, meshPolicies } from './policy.js';

/**
 * `prazo export` (SPEC X10): the same file prazo's clients load, written as each system's own
 * resources, so a mesh in front of a dependency enforces the timeouts, retries and budget the client
 * would, from one reviewed source. The numbers come from the loader (see `policy.ts`); each renderer
 * translates them and lists what its system cannot express. Nothing is written that the target would
 * refuse or apply as something else (`conflicts.ts`): a Service name no Service can have, a path the
 * HTTPRoute CRD refuses, two dependencies one Service's resources cannot tell apart. Dependencies
 * sharing a Service share its resources (`group.ts`), so no two objects carry one name.
 */

export const MESH_TARGETS = ['gateway-api', 'istio', 'linkerd', 'envoy', 'grpc'] as const;
export type MeshTarget = (typeof MESH_TARGETS)[number];

export interface ExportOptions {
  readonly target: MeshTarget;
  /** Gateway API: the release channel of the installed CRDs. Default `standard`. */
  readonly channel?: GatewayChannel;
  /** Only these dependencies (by name). Default: all. */
  readonly dependencies?: readonly string[];
  /** The source named in the files' header comment. */
  readonly source?: string;
}

/** One written file: its name, text, and how to apply it. */
export interface ExportedFile {
  readonly name: string;
  readonly text: string;
  readonly usage: string;
  /** How many resources (documents) it holds. */
  readonly resources: number;
}

export interface MeshExport {
  readonly target: MeshTarget;
  readonly files: readonly ExportedFile[];
  readonly notes: readonly string[];
  /** The numbers every file was written from. */
  readonly policies: readonly MeshPolicy[];
  /** Problems that kept the export from being written (then `files` is empty). */
  readonly problems: readonly MeshProblem[];
}

/**
 * {@link ExportOptions}, read as every options object is: an unknown target or key is an
 * `InvalidOptionsError` (with a did-you-mean), not a crash in the middle of rendering.
 */
const EXPORT_OPTIONS = defineOptions({
  target: option.oneOf(MESH_TARGETS, { required: true }),
  channel: option.oneOf(GATEWAY_CHANNELS),
  dependencies: option.matching<readonly string[]>(
    'a list of dependency names',
    (v) => Array.isArray(v) && v.every((name) => typeof name === 'string'),
  ),
  // Any text: the CLI passes the --config argument as typed (the header escapes what needs it).
  source: option.matching<string>('a string', (v) => typeof v === 'string'),
});

export function exportMesh(config: PrazoConfig, options: ExportOptions): MeshExport {
  readOptions('exportMesh', EXPORT_OPTIONS, options);
  const { policies: all, problems } = meshPolicies(config);
  const wanted = options.dependencies;
  const unknown = (wanted ?? []).filter((name) => !config.dependencies.has(name));
  const selected = wanted === undefined ? all : all.filter((p) => wanted.includes(p.dependency));
  const missing: MeshProblem[] = unknown.map((name) => ({
    path: ['dependencies'],
    message: `no dependency named \`${name}\``,
  }));
  // Asked for by name, a `mesh: false` dependency would otherwise leave an empty export and no word.
  [...config.dependencies.values()].forEach((dependency, index) => {
    const name = dependency.options.name;
    if (dependency.mesh === false && wanted?.includes(name)) {
      missing.push({
        dependency: name,
        path: ['dependencies', index, 'mesh'],
        message: `\`${name}\` is \`mesh: false\` (not behind a proxy): there is nothing to export for it`,
      });
    }
  });
  // A problem of no one dependency (the cluster domain) holds for every export.
  const relevant = problems.filter(
    (p) => wanted === undefined || p.dependency === undefined || wanted.includes(p.dependency),
  );
  const blocking = [...missing, ...relevant];
  // What the target's cluster or proxy would refuse, or apply as something else (#24).
  if (blocking.length === 0 && options.target !== 'grpc')
    blocking.push(...targetProblems(selected, options.target, config.mesh?.gateway));
  if (blocking.length > 0) {
    return { target: options.target, files: [], notes: [], policies: selected, problems: safe(blocking) };
  }
  const rendering = render(selected, options, config);
  if (rendering.problems !== undefined && rendering.problems.length > 0) {
    const problems = safe(rendering.problems);
    return { target: options.target, files: [], notes: [], policies: selected, problems };
  }
  const header = `# Generated by prazo export --to ${options.target}${options.source === undefined ? '' : ` from ${lineSafe(options.source)}`}; do not edit: change the config and export again.\n`;
  const names = new Set<string>();
  const files = rendering.files.map((file) => {
    let name = file.name;
    // Compared case-blind: on a case-insensitive file system (macOS, Windows) `A` and `a` are one file.
    for (let i = 2; names.has(name.toLowerCase()); i += 1) name = file.name.replace(/(\.[a-z]+)$/, `.${i}$1`);
    names.add(name.toLowerCase());
    const text =
      file.format === 'json'
        ? `${JSON.stringify(file.documents.length === 1 ? file.documents[0] : file.documents, null, 2)}\n`
        : `${header}# ${lineSafe(file.usage)}\n${file.documents.map(yamlText).join('---\n')}`;
    return { name, text, usage: lineSafe(file.usage), resources: file.documents.length };
  });
  const notes = rendering.notes.map(lineSafe);
  return { target: options.target, files, notes, policies: selected, problems: [] };
}

/**
 * Plain scalars some reader of the file takes for something other than a string. The files are read
 * by YAML 1.1 parsers — kubectl's (go-yaml: `no`, `on`, `y` are booleans, `1_000` a number,
 * `2001-12-14` a timestamp) and Envoy's (yaml-cpp, which makes `on`, `y` booleans and `0x1F` a
 * number) — and by YAML 1.2 ones (`0o17`, `1e3`): a dependency or Service named `no`, a namespace
 * `on`, written plain, would be a boolean where the API server or Envoy wants a string, and the
 * file refused. Both schemas' implicit tags (as the `yaml` package declares them), and the radix
 * prefixes Go's ParseInt also takes (`0X1F`, `0B1`, `0O7`).
 */
const IMPLICIT: readonly RegExp[] = [new Document(null, { version: '1.1' }), new Document(null)]
  .flatMap((d) => d.schema.tags)
  .filter((t): t is ScalarTag => 'test' in t && t.test instanceof RegExp && t.tag !== 'tag:yaml.org,2002:str')
  .map((t) => t.test!)
  .concat(/^[-+]?0[xXoObB]/);

/**
 * Characters YAML 1.1 reads as a line break (NEL, LS, PS: go-yaml folds them to a space even inside
 * quotes) or may not hold raw (C0 and C1 controls, DEL, a byte-order mark), and the bidi controls and
 * invisible characters the CLI escapes on its way to a terminal (src/cli/escape.ts: they make a line
 * read as something else): written as `\uXXXX` escapes, which only a double-quoted scalar
 * interprets, so a string holding one is double-quoted (and `prazo export`'s output, escaped by the
 * CLI, still reads back as the same strings).
 */
const UNSAFE_RAW =
  '\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f\\u00ad\\u061c\\u200b\\u200e\\u200f\\u2028-\\u202e\\u2060-\\u2064\\u2066-\\u2069\\ufeff';
const HAS_UNSAFE = new RegExp(`[\\n\\r${UNSAFE_RAW}]`);
const escapeRaw = (text: string, also = ''): string =>
  text.replace(
    new RegExp(`[${also}${UNSAFE_RAW}]`, 'g'),
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );

/** One YAML document, every string read back as that string by YAML 1.1 and 1.2 readers alike. */
function yamlText(value: Readonly<Record<string, unknown>>): string {
  const doc = new Document(value, { aliasDuplicateObjects: false });
  visit(doc, {
    Scalar(_key, node) {
      const v = node.value;
      if (typeof v === 'string' && (HAS_UNSAFE.test(v) || IMPLICIT.some((re) => re.test(v))))
        node.type = 'QUOTE_DOUBLE';
    },
  });
  // The `yaml` package leaves NEL, LS, PS, DEL, C1 controls and a BOM raw inside double quotes.
  return escapeRaw(doc.toString({ lineWidth: 0 }));
}

/**
 * Text for one line: a `#` comment of a file, or a note or usage line, which carry dependency names to
 * a terminal (`note: …` on stderr). A line break would end the comment or forge a line, an ESC drive
 * the terminal: escaped as in the files.
 */
const lineSafe = (text: string): string => escapeRaw(text, '\\n\\r');

/** Problems whose messages quote names, each message one safe line (the CLI prints them). */
const safe = (problems: readonly MeshProblem[]): MeshProblem[] =>
  problems.map((p) => ({ ...p, message: lineSafe(p.message) }));

function render(policies: readonly MeshPolicy[], options: ExportOptions, config: PrazoConfig): MeshRendering {
  switch (options.target) {
    case 'gateway-api':
      return renderGatewayApi(policies, {
        channel: options.channel ?? 'standard',
        ...(config.mesh?.gateway === undefined ? {} : { gateway: config.mesh.gateway }),
      });
    case 'istio':
      return renderIstio(policies);
    case 'linkerd':
      return renderLinkerd(policies);
    case 'envoy':
      return renderEnvoy(policies);
    case 'grpc':
      return renderGrpc(policies);
  }
}
