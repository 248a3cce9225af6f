export type { ErrorClassifier } from './core.js';
export { createDependency, type Dependency } from './dependency.js';
export type { DependencyListener } from './events.js';
export type { DependencyOptions } from './options.js';
export type {
  AttemptContext,
  AttemptKind,
  DependencyEvent,
  Disposable,
  ExecuteOptions,
  Operation,
  ResultVerdict,
} from './types.js';
