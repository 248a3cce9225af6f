/**
 * What the config yields per dependency: the options of `createDependency` (structurally the same
 * type, declared here so the measurement layer does not import the executor; `agreement.test.ts`
 * checks that one is assignable to the other).
 */
export interface RetryBudgetSettings {
  readonly windowMs?: number;
  readonly maxRatio?: number;
  readonly minPerSecond?: number;
}

export interface HedgeSettings {
  readonly percentile?: number;
  readonly maxExtraLoad?: number;
  readonly minDelayMs?: number;
  readonly maxDelayMs?: number;
}

export interface DependencySettings {
  readonly name: string;
  readonly p99Ms: number;
  readonly attempts?: number;
  readonly slack?: number;
  readonly forceSlack?: boolean;
  readonly connectCapMs?: number;
  readonly overheadMs?: number;
  readonly defaultDeadlineMs?: number;
  readonly retryBudget?: RetryBudgetSettings;
  readonly hedge?: boolean | HedgeSettings;
  readonly recorder?: {
    readonly windowMs?: number;
    readonly minSamples?: number;
    readonly relativeAccuracy?: number;
  };
  readonly backoff?: { readonly baseMs?: number; readonly capMs?: number };
  readonly retryResponseTimeout?: boolean;
}
