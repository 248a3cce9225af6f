/** Header names and bounds of deadline propagation (SPEC D1, D8), in one place. */
export const DeadlineHeaders = Object.freeze({
  /** Absolute wall-clock epoch ms: prazo's own format, from the seed. */
  epochMs: 'x-deadline-epoch-ms',
  /** gRPC's relative timeout (`<digits 1-8><unit H|M|S|m|u|n>`), also sent by gRPC-Web and Envoy. */
  grpcTimeout: 'grpc-timeout',
  /** Envoy's relative route timeout in ms, set on requests it forwards. */
  envoyExpected: 'x-envoy-expected-rq-timeout-ms',
} as const);

/** A deadline header value longer than this is malformed: refused at a bounded cost. */
export const MAX_DEADLINE_HEADER_LENGTH = 32;

/** Defaults of `deadlineFromHeaders`. */
export const DEADLINE_DEFAULTS = Object.freeze({
  /** Deadline given to a request that brings none, in ms. */
  defaultMs: 2_000,
  /** The most a caller can ask this service to hold on, in ms (SPEC D2). */
  maxMs: 10_000,
  /** Known clock skew of senders: how far their wall clocks run ahead of ours, in ms. */
  clockSkewMs: 0,
});

/** Bounds of the options above. A deadline cannot exceed what a timer can represent. */
export const DEADLINE_LIMITS = Object.freeze({
  maxMs: 2 ** 31 - 1,
  maxSkewMs: 3_600_000,
});
