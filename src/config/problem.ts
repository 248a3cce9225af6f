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
  /**
   * The lines around a syntax error, the column marked (`  5 | p99Ms: 40` / `    | ^`), as the
   * parser would show them; absent for the other problems (their key path says where).
   */
  readonly frame?: string;
}

export type Path = readonly (string | number)[];

/** `dependencies[2].retryBudget.maxRatio` */
export function formatPath(path: Path): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : out === '' ? seg : `.${seg}`;
  return out;
}

/**
 * `prazo.config.yaml:12:5: error: dependencies[2].attempts: must be ...` (compiler style), and under
 * a syntax error its code frame, indented.
 */
export function formatProblem(p: ConfigProblem): string {
  const where = p.line > 0 ? `${p.file}:${p.line}:${p.col}` : p.file;
  const key = p.key === '' ? '' : `${p.key}: `;
  const frame = p.frame === undefined ? '' : `\n${p.frame.replace(/^/gm, '    ')}`;
  return `${where}: ${p.severity}: ${key}${p.message}${frame}`;
}

/**
 * The last problem of a list cut at `listed` (CONFIG_LIMITS.maxProblems): how many more there are, of
 * each severity, and that they are not shown. An error when any of them is one, so that a reader
 * filtering the errors (loadConfig, a refused watched version) still learns of them.
 */
export function moreProblems(file: string, listed: number, errors: number, warnings: number): ConfigProblem {
  return {
    file,
    line: 0,
    col: 0,
    key: '',
    message: `… and ${errors + warnings} more (${errors} error(s), ${warnings} warning(s)): only the first ${listed} problems are listed`,
    severity: errors > 0 ? 'error' : 'warning',
  };
}

/** A problem before it is located in the file. */
export interface RawProblem {
  readonly path: Path;
  /** Set when the parser already knows the line (syntax errors); otherwise located from `path`. */
  readonly line?: number;
  /** The column, with `line`; 1 when not given. */
  readonly col?: number;
  readonly message: string;
  readonly severity: Severity;
  /** A syntax error's code frame. */
  readonly frame?: string;
}
