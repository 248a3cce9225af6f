import { grpcDuration } from './duration.js';
import { type MeshFile, type MeshPolicy, type MeshRendering, percentileName } from './policy.js';

/**
 * A gRPC service config per dependency (SPEC X10), for `grpc.service_config` of a channel (grpc-js,
 * grpc-go, grpc-java read the same JSON): a method config with `timeout` (the deadline: gRPC takes the
 * earlier of it and the call's own, so a callee never extends its caller, as prazo does), and either a
 * `retryPolicy` (attempts that fit the deadline, prazo's backoff, UNAVAILABLE) or, when the
 * dependency hedges, a `hedgingPolicy` whose `hedgingDelay` is the measured p95; plus
 * `retryThrottling` from the retry budget.
 *
 * The budget becomes gRPC's token bucket: every failed call costs a token, every success returns
 * `tokenRatio`, and retries and hedges stop while fewer than half the tokens are left. With
 * `tokenRatio = maxRatio` the bucket drains once failures pass about `maxRatio / (1 + maxRatio)` of
 * the calls (≈ 9% for 10%); `maxTokens` is twice the budget's floor over one window
 * (`2 × minPerSecond × windowMs / 1000`), so throttling starts after that floor of failures in a row.
 */

/** gRPC status names in service configs (UNAVAILABLE = 14). */
const GRPC_STATUS_NAME: Readonly<Record<number, string>> = Object.freeze({ 14: 'UNAVAILABLE' });

/** gRPC's bounds on `retryThrottling.maxTokens`: (0, 1000]. */
const MAX_TOKENS = 1000;

/**
 * gRPC (A6) treats a `maxAttempts` above 5 as 5, without a word: grpc-go and grpc-java always,
 * grpc-js unless the channel option `grpc-node.retry_max_attempts_limit` is raised. The config
 * written says what prazo means; the note says what a client will do with it.
 */
const GRPC_MAX_ATTEMPTS = 5;

export function grpcServiceConfig(policy: MeshPolicy, notes: string[] = []): Record<string, unknown> {
  const name = policy.dependency;
  const codes = policy.retryGrpcCodes.map((c) => GRPC_STATUS_NAME[c]!);
  const method: Record<string, unknown> = {
    name: [policy.placement.grpcService === undefined ? {} : { service: policy.placement.grpcService }],
    // One attempt: it is the whole call, cut at the attempt timeout as prazo cuts it.
    timeout: grpcDuration(
      policy.attempts >= 2 ? policy.deadlineMs : Math.min(policy.attemptTimeoutMs, policy.deadlineMs),
    ),
  };
  if (policy.attempts >= 2 && policy.hedge !== undefined) {
    method.hedgingPolicy = {
      maxAttempts: policy.attempts,
      hedgingDelay: grpcDuration(policy.hedge.delayMs),
      nonFatalStatusCodes: codes,
    };
    notes.push(
      `${name}: hedgingDelay ${grpcDuration(policy.hedge.delayMs)} is ${policy.hedge.from}, fixed; prazo hedges at the live ${percentileName(policy.hedge.percentile)}, and retryThrottling counts failures only, so a slow-but-answering dependency gets a hedge on every slow call`,
    );
    notes.push(
      `${name}: gRPC has no per-attempt timeout: an attempt runs until the ${policy.deadlineMs} ms deadline (prazo cuts it at ${policy.attemptTimeoutMs} ms)`,
    );
  } else if (policy.attempts >= 2) {
    const { baseMs, capMs } = policy.backoff;
    method.retryPolicy = {
      maxAttempts: policy.attempts,
      // gRPC needs a positive initial backoff: 1 ms stands for prazo's 0.
      initialBackoff: grpcDuration(Math.max(1, baseMs)),
      maxBackoff: grpcDuration(Math.max(1, baseMs, capMs)),
      backoffMultiplier: 2,
      retryableStatusCodes: codes,
    };
    notes.push(
      `${name}: gRPC has no per-attempt timeout: an attempt runs until the ${policy.deadlineMs} ms deadline (prazo cuts it at ${policy.attemptTimeoutMs} ms and may retry within it)`,
    );
  } else if (policy.hedge !== undefined) {
    notes.push(
      `${name}: one attempt fits the deadline: gRPC's hedging needs maxAttempts >= 2, so there is none`,
    );
  }
  if (policy.attempts > GRPC_MAX_ATTEMPTS && (method.retryPolicy ?? method.hedgingPolicy) !== undefined) {
    notes.push(
      `${name}: maxAttempts ${policy.attempts} is more than gRPC makes: clients cap it at ${GRPC_MAX_ATTEMPTS} (grpc-js: raise the channel option grpc-node.retry_max_attempts_limit to ${policy.attempts})`,
    );
  }
  const config: Record<string, unknown> = { methodConfig: [method] };
  if (policy.attempts >= 2) {
    const { budget } = policy;
    const floor = (2 * budget.minPerSecond * budget.windowMs) / 1000;
    const maxTokens = Math.min(MAX_TOKENS, Math.max(1, Math.round(floor)));
    // gRPC keeps three decimals of tokenRatio and needs it above 0.
    const tokenRatio = Math.max(0.001, Math.round(budget.maxRatio * 1000) / 1000);
    config.retryThrottling = { maxTokens, tokenRatio };
  }
  return config;
}

export function renderGrpc(policies: readonly MeshPolicy[]): MeshRendering {
  const notes: string[] = [
    'gRPC has no outlier ejection by consecutive failures (its outlier_detection policy is statistical, and needs 5+ hosts): not exported',
  ];
  const files: MeshFile[] = policies.map((policy) => ({
    name: `grpc-service-config.${fileSafe(policy.dependency)}.json`,
    format: 'json',
    documents: [grpcServiceConfig(policy, notes)],
    usage: `the channel option grpc.service_config (a JSON string) of the ${policy.dependency} client`,
  }));
  return { files, notes };
}

/** A dependency name as a file name part: anything but letters, digits, `.`, `_`, `-` becomes `_`. */
const fileSafe = (name: string): string => name.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
