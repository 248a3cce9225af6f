/** Bounds of the central configuration file (SPEC C7). */
export const CONFIG_LIMITS = Object.freeze({
  /** A config is a reviewable file, not a data dump: larger ones are refused before parsing. */
  maxBytes: 1024 * 1024,
  /**
   * Deepest nesting accepted, brackets (`[`, `{`) and block structure (indentation, `- `, `? `)
   * counted together. The `yaml` parser recurses per level and a thousand levels crash the process in
   * a way no try/catch stops; a config never needs more than a handful. Measured in one pass of the
   * `yaml` lexer before parsing (depth.ts).
   */
  maxDepth: 64,
  /** YAML aliases expand: bound them (billion laughs). */
  maxAliasCount: 100,
  maxDependencies: 1000,
  maxEndpoints: 1000,
  /**
   * Problems listed for one file, in file order; the rest are counted in one last problem ("… and N
   * more"). A hostile file (`- a: - a: …`, 1 MB) makes the parser report 200,000 errors: listing and
   * formatting each one cost tens of seconds and printed a wall nobody reads past its first lines.
   */
  maxProblems: 100,
  /** Keys that could reach an object's prototype: refused anywhere in the file. */
  forbiddenKeys: Object.freeze(['__proto__', 'constructor', 'prototype']),
});

/** The file `prazo check` and `loadConfig` look for when no path is given. */
export const DEFAULT_CONFIG_FILE = 'prazo.config.yaml';
