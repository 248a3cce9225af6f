/**
 * A parser of the Prometheus text exposition format (0.0.4), enough to read what an exporter serves:
 * `# TYPE` lines and samples `name{label="value",...} value [timestamp]`, with the format's escapes in
 * label values (`\\`, `\"`, `\n`). Malformed input throws with its line number, never half-parses.
 */

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Exposition {
  readonly samples: readonly Sample[];
  /** Metric family name → type (`counter`, `gauge`, `histogram`, ...), from `# TYPE` lines. */
  readonly types: ReadonlyMap<string, string>;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*/;

function parseValue(token: string, line: number): number {
  if (token === '+Inf' || token === 'Inf') return Number.POSITIVE_INFINITY;
  if (token === '-Inf') return Number.NEGATIVE_INFINITY;
  if (token === 'NaN') return Number.NaN;
  const value = Number(token);
  if (token === '' || Number.isNaN(value))
    throw new SyntaxError(`line ${line}: bad value ${JSON.stringify(token)}`);
  return value;
}

/** Reads `{a="x",b="y"}` starting at `text[0] === '{'`; returns the labels and the rest of the line. */
function parseLabels(text: string, line: number): [Record<string, string>, string] {
  const labels: Record<string, string> = {};
  let rest = text.slice(1);
  const fail = (why: string): never => {
    throw new SyntaxError(`line ${line}: ${why}`);
  };
  while (true) {
    rest = rest.trimStart();
    if (rest.startsWith('}')) return [labels, rest.slice(1)];
    const name = LABEL.exec(rest)?.[0] ?? fail('bad label name');
    rest = rest.slice(name.length).trimStart();
    if (!rest.startsWith('="')) fail(`expected =" after ${name}`);
    let i = 2;
    let value = '';
    for (; i < rest.length && rest[i] !== '"'; i += 1) {
      if (rest[i] !== '\\') {
        value += rest[i];
        continue;
      }
      i += 1;
      const escaped = rest[i];
      if (escaped === 'n') value += '\n';
      else if (escaped === '\\' || escaped === '"') value += escaped;
      else fail(`bad escape \\${escaped ?? ''}`);
    }
    if (i >= rest.length) fail(`unterminated value of ${name}`);
    if (Object.hasOwn(labels, name)) fail(`duplicate label ${name}`);
    labels[name] = value;
    rest = rest.slice(i + 1).trimStart();
    if (rest.startsWith(',')) rest = rest.slice(1);
    else if (!rest.startsWith('}')) fail('expected , or }');
  }
}

export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  text.split('\n').forEach((raw, index) => {
    const line = index + 1;
    const trimmed = raw.trim();
    if (trimmed === '') return;
    if (trimmed.startsWith('#')) {
      const type = /^#\s+TYPE\s+(\S+)\s+(\S+)$/.exec(trimmed);
      if (type) types.set(type[1]!, type[2]!);
      return;
    }
    const name = NAME.exec(trimmed)?.[0];
    if (!name) throw new SyntaxError(`line ${line}: bad metric name`);
    let rest = trimmed.slice(name.length);
    let labels: Record<string, string> = {};
    if (rest.startsWith('{')) [labels, rest] = parseLabels(rest, line);
    const tokens = rest.trim().split(/\s+/);
    if (tokens.length < 1 || tokens.length > 2 || tokens[0] === '')
      throw new SyntaxError(`line ${line}: expected a value`);
    samples.push({ name, labels, value: parseValue(tokens[0]!, line) });
  });
  return { samples, types };
}

/** The samples named `name` whose labels include every `match` pair. */
export function find(exposition: Exposition, name: string, match: Record<string, string> = {}): Sample[] {
  return exposition.samples.filter(
    (s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v),
  );
}

/** The one sample named `name` matching `match`; throws when there are none or several. */
export function sampleValue(
  exposition: Exposition,
  name: string,
  match: Record<string, string> = {},
): number {
  const found = find(exposition, name, match);
  if (found.length !== 1) throw new Error(`${found.length} samples of ${name} ${JSON.stringify(match)}`);
  return found[0]!.value;
}
