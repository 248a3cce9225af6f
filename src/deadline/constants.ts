/** Header names and bounds of deadline propagation (SPEC D1, D8), in one place. */
export const DeadlineHeaders = Object.freeze({
  /** Absolute wall-clock epoch ms: prazo's own format, from the seed. */
  epochMs: 'x-deadline-epoch-ms',
  /** gRPC's relative timeout (`<digits 1-8><unit H|M|S|m|u|n>`), also sent by gRPC-Web and Envoy. */
  grpcTimeout: 'grpc-timeout',
  /** Envoy's relative route timeout in ms, set on requests it forwards. */
  envoyExpected: 'x-envoy-expected-rq-timeout-ms',
  /** Connect's relative request timeout in ms (1-10 digits), sent by Connect-ES, -Go, -Kotlin, -Swift. */
  connectTimeout: 'connect-timeout-ms',
} as const);

/** A deadline header value longer than this is malformed: refused at a bounded cost. */
export const MAX_DEADLINE_HEADER_LENGTH = 32;
