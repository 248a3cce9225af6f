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
  /** Keys that could reach an object's prototype: refused anywhere in the file. */
  forbiddenKeys: Object.freeze(['__proto__', 'constructor', 'prototype']),
});

/** The file `prazo check` and `loadConfig` look for when no path is given. */
export const DEFAULT_CONFIG_FILE = 'prazo.config.yaml';
