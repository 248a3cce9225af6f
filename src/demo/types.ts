import type { TracePiece } from './trace/types.js';

/**
 * Shapes shared by the demo's parent process (orchestration, load, report) and its service processes.
 * Everything that crosses the IPC channel is plain JSON.
 */

/** The client stacks compared side by side. */
export type StackName = 'naive' | 'cockatiel' | 'prazo';
export const STACK_NAMES: readonly StackName[] = ['naive', 'cockatiel', 'prazo'];

/** How one supplier instance behaves during a scenario. */
export type SupplierBehaviour =
  /** Log-normal latency around the healthy profile. */
  | { readonly kind: 'healthy' }
  /** Answers at `factor` × the healthy p99 (± jitter). */
  | { readonly kind: 'slow'; readonly factor: number }
  /** Nothing listens: connections are refused. */
  | { readonly kind: 'refuse' }
  /** Accepts connections and requests, never answers. */
  | { readonly kind: 'hang' }
  /** Healthy, except that a share of answers stall for `stallMs`. */
  | { readonly kind: 'stall'; readonly probability: number; readonly stallMs: number }
  /** Healthy latency, but a share of answers are a 503 (a bad deploy, a dependency of its own down). */
  | { readonly kind: 'fail'; readonly probability: number }
  /** Connections refused for `downMs` from the scenario's start, then healthy (a restart, a failover). */
  | { readonly kind: 'outage'; readonly downMs: number };

export interface Scenario {
  readonly name: string;
  readonly title: string;
  /** One line saying what happens to the supplier. */
  readonly description: string;
  /** Behaviours of the first supplier instances; the last one applies to the remaining instances. */
  readonly supplier: readonly SupplierBehaviour[];
  /**
   * Its load time per stack, in ms, when the run does not set one (`--duration`, `--quick`): longer
   * than the run's default where the scenario's bar needs more checkouts to be measured at all (a
   * bar of 99.5% needs 200: at 60, one failure is 1.7%). Resolved by `resolveDemoOptions`.
   */
  readonly loadMs?: number;
  /**
   * The checkout rate of this scenario as a multiple of the run's (`overload-*`: 5×); the catalog's
   * rate is unchanged. Default 1.
   */
  readonly checkoutRateMultiple?: number;
  /** False for a scenario run only when named (`--scenarios`): the default run stays under 2 minutes. */
  readonly inDefaultRun?: boolean;
}

/** The settings of one stack's client on one hop. */
export type HopSettings =
  | { readonly stack: 'naive'; readonly timeoutMs: number; readonly attempts: number }
  | {
      readonly stack: 'cockatiel';
      readonly timeoutMs: number;
      readonly attempts: number;
      readonly initialDelayMs: number;
    }
  | {
      readonly stack: 'prazo';
      /** The downstream hop's measured healthy p99 (C1) and p95 (H1, until the live one is known). */
      readonly p99Ms: number;
      readonly p95Ms: number;
      /** Its healthy median (the time a hedge needs left, until the live one is known); unknown in a drill. */
      readonly p50Ms?: number;
      /** Its healthy quantile at the hedge percentile (H1, until the live one is known); unknown in a drill. */
      readonly hedgeMs?: number;
      readonly attempts: number;
      readonly hedge: boolean;
      readonly budget: { readonly windowMs: number; readonly ratio: number; readonly minPerSecond: number };
      /**
       * The hop's concurrency limit with patience (capacity-aware waiting, docs/throttling.md): at
       * most `maxInFlight` attempts, `maxQueue` calls waiting for a slot; an attempt holding a slot
       * waits up to the deadline instead of its calibrated timeout.
       */
      readonly capacity: { readonly maxInFlight: number; readonly maxQueue: number } | undefined;
    };

/** What a service process needs to start. */
export type ServiceConfig =
  | {
      readonly role: 'supplier';
      readonly stack: StackName;
      readonly instance: number;
      readonly behaviour: SupplierBehaviour;
      readonly seed: number;
    }
  | {
      readonly role: 'gateway' | 'orders' | 'inventory';
      readonly stack: StackName;
      /** Origins of the downstream service (several for the supplier's instances). */
      readonly downstream: readonly string[];
      readonly hop: HopSettings;
      /** Gateway only: connections of the pool to orders. */
      readonly poolConnections?: number;
      /** prazo only: the server's deadline for requests that bring none, and its local ceiling (D2). */
      readonly deadline?: { readonly defaultMs: number; readonly maxMs: number };
      readonly bucketMs: number;
    };

/** Downstream work of one service, accounted against the user's give-up instant. */
export interface LedgerReport {
  /** Requests received. */
  readonly requests: number;
  /** Requests still being worked on when the report was taken. */
  readonly inFlight: number;
  /** Sum over requests of the time worked after the user had given up, in ms. */
  readonly wastedMs: number;
  /** Requests that were (or still are) worked on after the user had given up. */
  readonly wastedRequests: number;
  /** Of those, still running when the report was taken (their wasted time is a lower bound). */
  readonly stillRunning: number;
}

/** A count per time bucket, keyed by `floor(epochMs / bucketMs)`. */
export type BucketCounts = Record<string, number>;

export interface PoolSample {
  readonly epochMs: number;
  /** Requests on a connection (waiting for or reading their response). */
  readonly running: number;
  /** Requests waiting for a free connection. */
  readonly queued: number;
}

/** What a service process reports at the end of a scenario. */
export interface ServiceReport {
  readonly role: ServiceConfig['role'];
  readonly stack: StackName;
  readonly instance?: number;
  readonly ledger: LedgerReport;
  /** Requests received per bucket. */
  readonly arrivals: BucketCounts;
  /** Requests this service sent downstream (every attempt and hedge), total and per bucket. */
  readonly sent?: { readonly total: number; readonly perBucket: BucketCounts };
  /** Latencies (ms) of successful downstream calls, for calibration. */
  readonly downstreamLatencies?: readonly number[];
  /** prazo only: calls its client refused locally (adaptive throttle), total and per bucket. */
  readonly throttled?: { readonly total: number; readonly perBucket: BucketCounts };
  /** Gateway only: pool occupancy samples. */
  readonly pool?: { readonly connections: number; readonly samples: readonly PoolSample[] };
}

/**
 * What changes between scenarios: processes live for the whole demo (they are warmed up once, as a
 * long-running service is) and are reset before each scenario: fresh pools, budgets, latency windows
 * and accounting; the supplier takes its new behaviour. Lingering work of the previous scenario is cut.
 */
export interface ResetRequest {
  readonly behaviour?: SupplierBehaviour;
  readonly hop?: HopSettings;
}

/** Parent → child. */
export type ParentMessage =
  | { readonly type: 'start'; readonly config: ServiceConfig }
  | { readonly type: 'reset'; readonly id: number; readonly reset: ResetRequest }
  /** `full`: include the raw latency samples (calibration); without it the report stays small. */
  | { readonly type: 'report'; readonly id: number; readonly full: boolean }
  /** The spans the service kept this scenario (issue #26: the report's trace waterfall). */
  | { readonly type: 'traces'; readonly id: number }
  | { readonly type: 'stop' };

/** Child → parent. */
export type ChildMessage =
  | { readonly type: 'booted' }
  | { readonly type: 'ready'; readonly port: number }
  | { readonly type: 'report'; readonly id: number; readonly report: ServiceReport }
  | { readonly type: 'reset'; readonly id: number }
  | { readonly type: 'traces'; readonly id: number; readonly traces: readonly TracePiece[] }
  | { readonly type: 'failed'; readonly message: string };

/** How one user request ended. */
export type UserOutcome = 'ok' | 'error' | 'timeout';

export interface UserResult {
  readonly route: 'checkout' | 'catalog';
  /** When it was sent, in ms since the load started. */
  readonly sentMs: number;
  /** How long the user waited (≤ the user's deadline), in ms. */
  readonly latencyMs: number;
  readonly outcome: UserOutcome;
  /** HTTP status, 0 when none arrived. */
  readonly status: number;
}
