import type { Severity } from '../slo/types.js';

/** One problem in a config file: where (file, line, column, key path) and what. */
export interface ConfigProblem {
  readonly file: string;
  /** 1-based; 0 when the problem is about the file as a whole. */
  readonly line: number;
  readonly col: number;
  /** Dotted key path, e.g. `dependencies[2].retryBudget.maxRatio`. */
  readonly key: string;
  readonly message: string;
  readonly severity: Severity;
}

export type Path = readonly (string | number)[];

/** `dependencies[2].retryBudget.maxRatio` */
export function formatPath(path: Path): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : out === '' ? seg : `.${seg}`;
  return out;
}

/** `prazo.config.yaml:12:5: error: dependencies[2].attempts: must be ...` (compiler style). */
export function formatProblem(p: ConfigProblem): string {
  const where = p.line > 0 ? `${p.file}:${p.line}:${p.col}` : p.file;
  const key = p.key === '' ? '' : `${p.key}: `;
  return `${where}: ${p.severity}: ${key}${p.message}`;
}

/** A problem before it is located in the file. */
export interface RawProblem {
  readonly path: Path;
  /** Set when the parser already knows the line (syntax errors); otherwise located from `path`. */
  readonly line?: number;
  readonly message: string;
  readonly severity: Severity;
}
