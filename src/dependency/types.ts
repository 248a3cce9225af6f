import type { Deadline } from '../deadline/deadline.js';

/**
 * The contract of the executor (`createDependency(...).execute`), shared by every integration (HTTP,
 * gRPC, PostgreSQL, ...). Defined here, apart from the implementation, so integrations can be written
 * against it.
 */

/** Why an attempt exists: the original request, a retry after a failure, or a hedge (SPEC H1). */
export type AttemptKind = 'original' | 'retry' | 'hedge';

/** What one attempt of an operation receives. */
export interface AttemptContext {
  /** Aborts when this attempt must stop: its timeout, the deadline, the caller, or a hedge won. */
  readonly signal: AbortSignal;
  /** This attempt's time limit in ms: min(calibrated attempt timeout, remaining deadline) (SPEC R6). */
  readonly timeoutMs: number;
  /** The connect timeout for this attempt in ms: min(calibrated connect timeout, `timeoutMs`) (SPEC C2). */
  readonly connectTimeoutMs: number;
  /** 1 for the original, 2.. for retries and hedges, in start order. */
  readonly attempt: number;
  readonly kind: AttemptKind;
  /** When the attempt started, in monotonic ms of the dependency's clock (its `now()`). */
  readonly startedAt: number;
  /**
   * True when the call's remaining deadline, not the calibrated attempt timeout, set `timeoutMs`: an
   * attempt stopped at its limit then ran out of the caller's time (DEADLINE_EXCEEDED), not its own
   * (RESPONSE_TIMEOUT).
   */
  readonly byDeadline: boolean;
  /** The deadline this attempt runs under: the call's, cut at the end of `timeoutMs`. */
  readonly deadline: Deadline;
  /** Headers carrying the deadline (and the idempotency key, when there is one) downstream. */
  readonly headers: Readonly<Record<string, string>>;
}

/** An async operation against a dependency, run once per attempt. */
export type Operation<T> = (context: AttemptContext) => Promise<T>;

/** How a *successful* result (no throw) should be treated, e.g. an HTTP 503 response. */
export interface ResultVerdict {
  /** True when the result is a failure worth another attempt (SPEC R2). */
  readonly retryable: boolean;
  /** The server's own wait before retrying (Retry-After), in ms (SPEC R3). */
  readonly retryAfterMs?: number;
  /** How the result counts for latency recording. Default: 'error' when retryable, else 'success'. */
  readonly outcome?: 'success' | 'error';
  /**
   * The server pushed back (SPEC X6): it failed because one of *its* dependencies did, and asks not to
   * be retried. The result ends the call at once: no retry, no hedge (a copy in flight is cancelled).
   * Not a failure of the instance that answered it, which was up and answering: whatever counts
   * failures per instance (ejection) must leave it out.
   */
  readonly pushback?: boolean;
}

/** Every decision the executor makes, for metrics and logs. Cheap when nobody listens. */
export type DependencyEvent =
  | {
      readonly type: 'attempt';
      readonly dependency: string;
      readonly kind: AttemptKind;
      readonly attempt: number;
      /** The instance it was sent to (an origin), when the dependency is several (SPEC X5). */
      readonly instance?: string;
    }
  | {
      readonly type: 'attempt-end';
      readonly dependency: string;
      readonly kind: AttemptKind;
      readonly attempt: number;
      readonly instance?: string;
      readonly latencyMs: number;
      readonly outcome: 'success' | 'error' | 'timeout' | 'cancelled';
      /** For timeouts: where the time ran out (`queue`: never written, not recorded as latency). */
      readonly phase?: 'queue' | 'connect' | 'response' | 'body' | 'deadline';
      readonly error?: unknown;
    }
  | { readonly type: 'budget-refused'; readonly dependency: string; readonly kind: 'retry' | 'hedge' }
  | {
      /**
       * The adaptive throttle refused a call locally (docs/throttling.md): in its window `requests`
       * attempts were counted (refusals included) and `accepts` of them accepted; the call was refused
       * with `probability`. Nothing was sent.
       */
      readonly type: 'throttled';
      readonly dependency: string;
      readonly requests: number;
      readonly accepts: number;
      readonly probability: number;
    }
  | {
      readonly type: 'deadline-insufficient';
      readonly dependency: string;
      readonly remainingMs: number;
      readonly neededMs: number;
      readonly attempt: number;
    }
  | { readonly type: 'hedge-won'; readonly dependency: string; readonly attempt: number }
  | {
      /**
       * A hedge was due and not sent: the time left (`remainingMs`) was below what a hedge needs
       * (`neededMs`: the live `hedge.timeLeftPercentile` of the latency, or D4's p99 when the
       * latency source cannot tell it).
       */
      readonly type: 'hedge-skipped';
      readonly dependency: string;
      readonly reason: 'deadline';
      readonly remainingMs: number;
      readonly neededMs: number;
    }
  | {
      /**
       * A timer of a call fired `lateMs` after its instant (the event loop was blocked). Its verdict
       * waited for the pending I/O to be read first, so an answer already in the socket still wins.
       */
      readonly type: 'timer-late';
      readonly dependency: string;
      readonly lateMs: number;
    }
  | {
      /**
       * The concurrency limit refused an attempt (SPEC X7): a call or a retry found the queue full
       * (`queue-full`) or waited until it could no longer fit its deadline (`queue-timeout`); a hedge
       * found no free slot (`no-slot`, hedges never wait). Nothing was sent.
       */
      readonly type: 'limited';
      readonly dependency: string;
      readonly kind: AttemptKind;
      readonly reason: 'queue-full' | 'queue-timeout' | 'no-slot';
      readonly limit: number;
      readonly inFlight: number;
      readonly queued: number;
      readonly waitedMs: number;
    }
  | {
      /**
       * An instance left the rotation (SPEC X5): `failures` consecutive failures (or one, on
       * probation), or `latency` (its window p99 `p99Ms` against its peers' median `peerP99Ms`). It is
       * out for `ejectionMs`; `ejections` counts its recent ejections (the length's multiplier).
       */
      readonly type: 'instance-ejected';
      readonly dependency: string;
      readonly instance: string;
      readonly reason: 'failures' | 'latency';
      readonly ejectionMs: number;
      readonly ejections: number;
      readonly p99Ms?: number;
      readonly peerP99Ms?: number;
      /** A latency ejection for its share of unanswered attempts (overtaken by a hedge, cut by the deadline past the p99): that share and its peers' median. */
      readonly unansweredShare?: number;
      readonly peerUnansweredShare?: number;
    }
  | {
      /** An ejected instance is back, on probation; or an instance joined or left (discovery). */
      readonly type: 'instance-returned' | 'instance-added' | 'instance-removed';
      readonly dependency: string;
      readonly instance: string;
    }
  | {
      /** A DNS lookup of the dependency's instances failed or found none: the instances there were stay. */
      readonly type: 'discovery-failed';
      readonly dependency: string;
      readonly hostname: string;
      readonly error: unknown;
    }
  | {
      /**
       * Attempt `attempt` was answered with a pushback (SPEC X6): the call ends with that answer, no
       * retry and no hedge follow, and a copy still in flight is cancelled.
       */
      readonly type: 'pushback';
      readonly dependency: string;
      readonly kind: AttemptKind;
      readonly attempt: number;
    }
  | {
      /**
       * A measured p99 replaced the assumed one the dependency started from (SPEC C8: the typical
       * value of its kind): from now on its timeouts come from a measurement.
       */
      readonly type: 'p99-measured';
      readonly dependency: string;
      readonly assumedP99Ms: number;
      readonly p99Ms: number;
    }
  | {
      readonly type: 'retry-after';
      readonly dependency: string;
      readonly waitMs: number;
      readonly honoured: boolean;
    }
  | {
      /**
       * The dependency took new settings (`update`, `recalibrate`, a config file reloaded): calls
       * starting from now plan with them; calls in flight keep theirs.
       */
      readonly type: 'update';
      readonly dependency: string;
      /** The options given (`p99Ms`, `hedge`, ...). */
      readonly keys: readonly string[];
      /** The config version the settings come from, when a config watcher applied them. */
      readonly version: ConfigVersion | undefined;
    };

/**
 * Which version of a config file a dependency's settings come from (prazo/config's `watchConfig`):
 * the content hash of the file and the watcher's generation (1 for the file read at start, +1 for
 * each version applied since).
 */
export interface ConfigVersion {
  /** The first 16 hex digits of the file's SHA-256 (`sha256sum prazo.config.yaml | cut -c1-16`). */
  readonly hash: string;
  /** 1 for the file read at start-up, then one more for each version applied. */
  readonly generation: number;
}

/** Returned by every `on...` subscription: call `dispose()` to unsubscribe (cockatiel style). */
export interface Disposable {
  dispose(): void;
}
