/** Bounds of the central configuration file (SPEC C7). */
export const CONFIG_LIMITS = Object.freeze({
  /** A config is a reviewable file, not a data dump: larger ones are refused before parsing. */
  maxBytes: 1024 * 1024,
  /** YAML aliases expand: bound them (billion laughs). */
  maxAliasCount: 100,
  maxDependencies: 1000,
  maxEndpoints: 1000,
  /** Keys that could reach an object's prototype: refused anywhere in the file. */
  forbiddenKeys: Object.freeze(['__proto__', 'constructor', 'prototype']),
});

/** The file `prazo check` and `loadConfig` look for when no path is given. */
export const DEFAULT_CONFIG_FILE = 'prazo.config.yaml';
