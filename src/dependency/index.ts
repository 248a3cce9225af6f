/**
 * The executor's public face: the root entry re-exports this file whole, so a name added here is a
 * name added to `prazo` (and to api/root.api.md).
 */
export type { ErrorClassifier } from './core.js';
export { createDependency, type Dependency } from './dependency.js';
export type { DependencyListener } from './events.js';
export type { DependencyOptions, ExecuteOptions } from './options.js';
export type {
  AttemptContext,
  AttemptKind,
  DependencyEvent,
  Disposable,
  Operation,
  ResultVerdict,
} from './types.js';
