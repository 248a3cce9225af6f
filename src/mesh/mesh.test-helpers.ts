/**
 * What each mesh's own definitions say, for the export's tests (SPEC X10). Facts read from the
 * systems' published sources, encoded here as data (nothing of theirs is copied into the repository):
 * - Envoy: the v3 protos of envoyproxy/data-plane-api — envoy/config/route/v3/route.proto
 *   (RouteConfiguration), route/v3/route_components.proto (VirtualHost, Route, RouteMatch, RouteAction,
 *   RouteAction.MaxStreamDuration, RetryPolicy and its RetryBackOff, RateLimitedRetryBackOff,
 *   ResetHeader, RetryHostPredicate, HedgePolicy, HeaderMatcher), type/matcher/v3/string.proto
 *   (StringMatcher), config/cluster/v3/cluster.proto (Cluster), cluster/v3/circuit_breaker.proto
 *   (CircuitBreakers.Thresholds.RetryBudget), cluster/v3/outlier_detection.proto, type/v3/percent.proto,
 *   config/endpoint/v3/endpoint.proto and endpoint_components.proto, config/core/v3/address.proto,
 *   config/bootstrap/v3/bootstrap.proto (Bootstrap.static_resources),
 *   extensions/upstreams/http/v3/http_protocol_options.proto,
 *   extensions/retry/host/previous_hosts/v3/previous_hosts.proto; `retry_on` values from the router
 *   filter's documentation of `x-envoy-retry-on` / `x-envoy-retry-grpc-on`;
 *   extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto (HttpFilter),
 *   extensions/filters/http/admission_control/v3/admission_control.proto, config/core/v3/base.proto
 *   (RuntimeDouble, RuntimePercent, RuntimeUInt32: `runtime_key` min_len 1), type/v3/range.proto
 *   (Int32Range), extensions/filters/http/router/v3/router.proto, route/v3/route_components.proto
 *   (FilterConfig, Route.typed_per_filter_config); what the admission_control factory refuses at load
 *   (source/extensions/filters/http/admission_control/config.cc and success_criteria_evaluator.cc)
 *   and how it computes (admission_control.cc, thread_local_controller.cc) in
 *   {@link admissionControlProblems} and {@link envoyRejectionProbability}.
 * - Linkerd: the policy controller's annotation parsers, linkerd/linkerd2
 *   policy-controller/k8s/index/src/outbound/index.rs (`parse_timeouts`, `parse_duration`,
 *   `parse_accrual_config`) and index/http.rs, index/grpc.rs (`parse_http_retry`, `parse_grpc_retry`).
 * - Gateway API: the CEL rules of the CRDs, kubernetes-sigs/gateway-api
 *   config/crd/experimental/gateway.networking.k8s.io_httproutes.yaml and
 *   gateway.networking.x-k8s.io_xbackendtrafficpolicies.yaml (the published models check the OpenAPI
 *   schema, not CEL).
 */

/** A field's type: a scalar, a message name, `[type]` a repeated field, `map:<type>` a map. */
type FieldType = string | readonly [string];

export const ENVOY_MESSAGES: Readonly<Record<string, Readonly<Record<string, FieldType>>>> = {
  Bootstrap: { static_resources: 'StaticResources' },
  StaticResources: { clusters: ['Cluster'] },
  RouteConfiguration: { name: 'string', virtual_hosts: ['VirtualHost'] },
  VirtualHost: { name: 'string', domains: ['string'], routes: ['Route'] },
  Route: {
    name: 'string',
    match: 'RouteMatch',
    route: 'RouteAction',
    typed_per_filter_config: 'named:Any',
  },
  RouteMatch: { prefix: 'string' },
  RouteAction: {
    cluster: 'string',
    timeout: 'Duration',
    retry_policy: 'RetryPolicy',
    hedge_policy: 'HedgePolicy',
    max_stream_duration: 'MaxStreamDuration',
  },
  MaxStreamDuration: { grpc_timeout_header_max: 'Duration' },
  RetryPolicy: {
    retry_on: 'string',
    num_retries: 'uint32',
    per_try_timeout: 'Duration',
    retriable_status_codes: ['uint32'],
    retry_back_off: 'RetryBackOff',
    rate_limited_retry_back_off: 'RateLimitedRetryBackOff',
    retry_host_predicate: ['RetryHostPredicate'],
    host_selection_retry_max_attempts: 'int64',
    retriable_request_headers: ['HeaderMatcher'],
  },
  RetryBackOff: { base_interval: 'PositiveDuration', max_interval: 'PositiveDuration' },
  RateLimitedRetryBackOff: { reset_headers: ['ResetHeader'], max_interval: 'PositiveDuration' },
  ResetHeader: { name: 'string', format: 'enum:SECONDS|UNIX_TIMESTAMP' },
  RetryHostPredicate: { name: 'string', typed_config: 'Any' },
  HeaderMatcher: { name: 'string', string_match: 'StringMatcher', present_match: 'bool' },
  StringMatcher: { exact: 'string' },
  HedgePolicy: { hedge_on_per_try_timeout: 'bool' },
  Cluster: {
    name: 'string',
    type: 'enum:STATIC|STRICT_DNS|LOGICAL_DNS|EDS|ORIGINAL_DST',
    connect_timeout: 'PositiveDuration',
    load_assignment: 'ClusterLoadAssignment',
    circuit_breakers: 'CircuitBreakers',
    outlier_detection: 'OutlierDetection',
    typed_extension_protocol_options: 'map:Any',
  },
  ClusterLoadAssignment: { cluster_name: 'string', endpoints: ['LocalityLbEndpoints'] },
  LocalityLbEndpoints: { lb_endpoints: ['LbEndpoint'] },
  LbEndpoint: { endpoint: 'Endpoint' },
  Endpoint: { address: 'Address' },
  Address: { socket_address: 'SocketAddress' },
  SocketAddress: { address: 'string', port_value: 'port' },
  CircuitBreakers: { thresholds: ['Thresholds'] },
  Thresholds: { priority: 'enum:DEFAULT|HIGH', retry_budget: 'RetryBudget' },
  RetryBudget: { budget_percent: 'Percent', min_retry_concurrency: 'uint32' },
  Percent: { value: 'percent' },
  OutlierDetection: {
    consecutive_5xx: 'uint32',
    base_ejection_time: 'PositiveDuration',
    max_ejection_time: 'PositiveDuration',
  },
  // The connection manager's filter list (the fragment envoy-http-filters.yaml holds).
  HttpConnectionManager: { http_filters: ['HttpFilter'] },
  HttpFilter: { name: 'string', typed_config: 'Any', disabled: 'bool' },
  SuccessCriteria: { http_criteria: 'HttpCriteria', grpc_criteria: 'GrpcCriteria' },
  HttpCriteria: { http_success_status: ['Int32Range'] },
  GrpcCriteria: { grpc_success_status: ['uint32'] },
  Int32Range: { start: 'int32', end: 'int32' },
  RuntimeDouble: { default_value: 'double', runtime_key: 'string' },
  RuntimePercent: { default_value: 'Percent', runtime_key: 'string' },
  RuntimeUInt32: { default_value: 'uint32', runtime_key: 'string' },
  RuntimeFeatureFlag: { default_value: 'bool', runtime_key: 'string' },
  // The `Any`s the export writes, by type URL.
  'envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate': {},
  'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': { explicit_http_config: 'ExplicitHttpConfig' },
  ExplicitHttpConfig: { http2_protocol_options: 'Http2ProtocolOptions' },
  Http2ProtocolOptions: {},
  'envoy.extensions.filters.http.admission_control.v3.AdmissionControl': {
    enabled: 'RuntimeFeatureFlag',
    success_criteria: 'SuccessCriteria',
    sampling_window: 'Duration',
    aggression: 'RuntimeDouble',
    sr_threshold: 'RuntimePercent',
    rps_threshold: 'RuntimeUInt32',
    max_rejection_probability: 'RuntimePercent',
  },
  'envoy.extensions.filters.http.router.v3.Router': {},
  // `config` empty (`{}`, an Any with no type): the filter disabled by default is enabled here.
  'envoy.config.route.v3.FilterConfig': { config: 'Any?', is_optional: 'bool', disabled: 'bool' },
};

/** `retry_on` conditions Envoy's router knows (HTTP, then gRPC). */
export const ENVOY_RETRY_ON: ReadonlySet<string> = new Set([
  '5xx',
  'gateway-error',
  'reset',
  'reset-before-request',
  'connect-failure',
  'envoy-ratelimited',
  'retriable-4xx',
  'refused-stream',
  'retriable-status-codes',
  'retriable-headers',
  'http3-post-connect-failure',
  'cancelled',
  'deadline-exceeded',
  'internal',
  'resource-exhausted',
  'unavailable',
]);

/** protobuf JSON `google.protobuf.Duration`: seconds, up to 9 fractional digits, `s`. */
const PROTO_DURATION = /^\d+(\.\d{1,9})?s$/;

/** Every deviation of `value` from the message `type`, as `path: what` (empty: conforms). */
export function envoyProblems(type: string, value: unknown, path = type): string[] {
  const out: string[] = [];
  const fields = ENVOY_MESSAGES[type];
  if (fields === undefined) return [`${path}: no field list for ${type}`];
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return [`${path}: not a ${type} message`];
  for (const [key, v] of Object.entries(value)) {
    const t = fields[key];
    if (t === undefined) out.push(`${path}.${key}: ${type} has no field \`${key}\``);
    else out.push(...fieldProblems(t, v, `${path}.${key}`));
  }
  return out;
}

function fieldProblems(t: FieldType, v: unknown, path: string): string[] {
  if (Array.isArray(t)) {
    if (!Array.isArray(v)) return [`${path}: not a list`];
    return v.flatMap((item, i) => fieldProblems(t[0], item, `${path}[${i}]`));
  }
  const type = t as string;
  const bad = (what: string) => [`${path}: ${JSON.stringify(v)} is not ${what}`];
  const isInt = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x);
  if (type === 'string') return typeof v === 'string' && v.length > 0 ? [] : bad('a non-empty string');
  if (type === 'bool') return typeof v === 'boolean' ? [] : bad('a bool');
  if (type === 'uint32') return isInt(v) && v >= 0 && v <= 2 ** 32 - 1 ? [] : bad('a uint32');
  if (type === 'int64') return isInt(v) ? [] : bad('an int64');
  if (type === 'int32') return isInt(v) && Math.abs(v) < 2 ** 31 ? [] : bad('an int32');
  if (type === 'double') return typeof v === 'number' && Number.isFinite(v) ? [] : bad('a double');
  if (type === 'port') return isInt(v) && v >= 1 && v <= 65_535 ? [] : bad('a port (uint32 <= 65535)');
  if (type === 'percent')
    return typeof v === 'number' && v >= 0 && v <= 100 ? [] : bad('a Percent value in [0, 100]');
  if (type === 'Duration' || type === 'PositiveDuration') {
    if (typeof v !== 'string' || !PROTO_DURATION.test(v)) return bad('a protobuf JSON Duration ("0.119s")');
    if (type === 'PositiveDuration' && Number.parseFloat(v) <= 0) return bad('a Duration > 0');
    return [];
  }
  if (type.startsWith('enum:'))
    return type
      .slice(5)
      .split('|')
      .includes(v as string)
      ? []
      : bad(type);
  // An Any that may be empty (`{}`: protobuf JSON's empty Any, no type URL).
  if (type === 'Any?' && v !== null && typeof v === 'object' && Object.keys(v).length === 0) return [];
  if (type === 'Any' || type === 'Any?') {
    const url = (v as Record<string, unknown> | null)?.['@type'];
    if (typeof url !== 'string' || !url.startsWith('type.googleapis.com/')) return bad('an Any with @type');
    const { '@type': _, ...rest } = v as Record<string, unknown>;
    return envoyProblems(url.slice('type.googleapis.com/'.length), rest, path);
  }
  // A map keyed by name (a filter's, in typed_per_filter_config), each value checked as the type.
  if (type.startsWith('named:')) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return bad('a map');
    return Object.entries(v).flatMap(([k, item]) =>
      k.length === 0 ? [`${path}: an empty key`] : fieldProblems(type.slice(6), item, `${path}[${k}]`),
    );
  }
  if (type.startsWith('map:')) {
    if (v === null || typeof v !== 'object') return bad('a map');
    return Object.entries(v).flatMap(([k, item]) => {
      const inner = fieldProblems(type.slice(4), item, `${path}[${k}]`);
      // typed_extension_protocol_options is keyed by the extension's type name.
      const url = (item as Record<string, unknown>)['@type'];
      return url === `type.googleapis.com/${k}` ? inner : [...inner, `${path}[${k}]: key is not its @type`];
    });
  }
  return envoyProblems(type, v, path);
}

/** Linkerd's `parse_duration`: an integer and `ms|s|m|h|d` (or a bare `0`), no fraction, no sign. */
export function linkerdDurationMs(text: string): number {
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(text.trim());
  if (m === null) throw new Error(`not a Linkerd duration: ${text}`);
  const n = Number(m[1]);
  if (m[2] === undefined) {
    if (n !== 0) throw new Error(`missing unit: ${text}`);
    return 0;
  }
  return n * { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 'ms'];
}

/** Linkerd's `retry.linkerd.io/http`: codes in [100, 600), ranges `a-b`, `5xx`, `gateway-error`. */
export function linkerdHttpConditions(text: string): Array<[number, number]> {
  return text.split(',').map((cond) => {
    if (cond.toLowerCase() === '5xx') return [500, 599];
    if (cond.toLowerCase() === 'gateway-error') return [502, 504];
    const code = (s: string) => {
      const n = /^\d+$/.test(s) ? Number(s) : Number.NaN;
      return n >= 100 && n < 600 ? n : undefined;
    };
    const one = code(cond);
    if (one !== undefined) return [one, one];
    const [a, b] = cond.split('-').map(code);
    if (a !== undefined && b !== undefined && a <= b) return [a, b];
    throw new Error(`invalid retry condition: ${cond}`);
  });
}

/** Linkerd's `retry.linkerd.io/grpc` names. */
export const LINKERD_GRPC_CONDITIONS: ReadonlySet<string> = new Set([
  'cancelled',
  'deadline-exceeded',
  'internal',
  'resource-exhausted',
  'unavailable',
]);

/** A GEP-2257 duration in ms (`^([0-9]{1,5}(h|m|s|ms)){1,4}$`, checked by the models too). */
export function gatewayDurationMs(text: string): number {
  if (!/^([0-9]{1,5}(h|m|s|ms)){1,4}$/.test(text)) throw new Error(`not a GEP-2257 duration: ${text}`);
  let ms = 0;
  for (const [, n, unit] of text.matchAll(/(\d+)(ms|h|m|s)/g)) {
    ms += Number(n) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit as 'ms'];
  }
  return ms;
}

/**
 * The HTTPRoute CRD's validation of `HTTPPathMatch.value` for `Exact` and `PathPrefix`, rule by rule
 * (kubernetes-sigs/gateway-api config/crd/standard/gateway.networking.k8s.io_httproutes.yaml, v1:
 * `maxLength: 1024` and the `x-kubernetes-validations` on `matches[].path`): the messages the API
 * server would answer. Empty: the cluster accepts the path.
 */
export function httpRoutePathCelProblems(value: string): string[] {
  const out: string[] = [];
  if (value.length > 1024) out.push('Too long: may not be more than 1024 bytes');
  if (!value.startsWith('/')) out.push("value must be an absolute path and start with '/'");
  for (const part of ['//', '/./', '/../', '%2f', '%2F', '#'])
    if (value.includes(part)) out.push(`must not contain '${part}'`);
  for (const end of ['/..', '/.']) if (value.endsWith(end)) out.push(`must not end with '${end}'`);
  // CEL's matches() is RE2; this pattern means the same in JavaScript.
  if (!/^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$/.test(value))
    out.push(
      "must only contain valid characters (matching ^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$)",
    );
  return out;
}

/** The HTTPRoute CRD's bounds on `spec.rules`: at most 16 rules, 64 matches each, 128 in all (CEL). */
export const HTTP_ROUTE_LIMITS = Object.freeze({ rules: 16, matchesPerRule: 64, matches: 128 });

type Json = Record<string, unknown>;

/**
 * What Envoy refuses when it loads an `admission_control` filter, beyond its fields' types: the
 * factory's own checks (sr_threshold at least 1%, a success range within [100, 600) and not empty,
 * a gRPC code up to 16, `success_criteria` set: the oneof is required) and the runtime types' (a
 * Percent in [0, 100]); plus what this export relies on to mean what prazo means: a sampling window
 * of whole seconds (Envoy rounds it down) and aggression at least 1 (Envoy raises a lower one to 1).
 */
export function admissionControlProblems(config: Json, path = 'AdmissionControl'): string[] {
  const out: string[] = [];
  const criteria = config.success_criteria as Json | undefined;
  if (criteria === undefined) out.push(`${path}.success_criteria: required (evaluation_criteria oneof)`);
  const ranges = ((criteria?.http_criteria as Json | undefined)?.http_success_status ?? []) as Json[];
  if (criteria?.http_criteria !== undefined && ranges.length === 0)
    out.push(`${path}: http_success_status needs at least one range`);
  for (const r of ranges) {
    const [start, end] = [r.start as number, r.end as number];
    if (!(start >= 100 && end <= 600 && start < end))
      out.push(`${path}: invalid HTTP range [${start}, ${end})`);
  }
  const codes = ((criteria?.grpc_criteria as Json | undefined)?.grpc_success_status ?? []) as number[];
  for (const c of codes) if (c > 16) out.push(`${path}: invalid gRPC code ${c}`);
  const pct = (field: string): number | undefined =>
    ((config[field] as Json | undefined)?.default_value as Json | undefined)?.value as number | undefined;
  const sr = pct('sr_threshold');
  if (sr !== undefined && sr < 1) out.push(`${path}: Success rate threshold cannot be less than 1.0%.`);
  for (const field of ['sr_threshold', 'max_rejection_probability']) {
    const v = pct(field);
    if (v !== undefined && !(v >= 0 && v <= 100))
      out.push(`${path}.${field}: ${v} is not a Percent in [0, 100]`);
  }
  const window = config.sampling_window as string | undefined;
  if (window !== undefined && !/^[1-9]\d*s$/.test(window))
    out.push(`${path}.sampling_window: ${window} is not whole seconds (Envoy rounds it down)`);
  const aggression = (config.aggression as Json | undefined)?.default_value as number | undefined;
  if (aggression !== undefined && aggression < 1) out.push(`${path}.aggression: below 1 is read as 1`);
  return out;
}

/**
 * The probability Envoy's admission_control refuses a request with, given the counts of its window
 * (`requests` answered, `successes` among them), as admission_control.cc and
 * thread_local_controller.cc compute it: nothing while floor(requests / window s) < rps_threshold,
 * else min(max_rejection_probability, max(0, (requests − successes / sr) / (requests + 1))^(1/aggression)).
 */
export function envoyRejectionProbability(config: Json, requests: number, successes: number): number {
  const value = (field: string): unknown => (config[field] as Json | undefined)?.default_value;
  const windowS = Math.floor(Number.parseFloat(config.sampling_window as string));
  const averageRps = requests === 0 ? 0 : Math.floor(requests / windowS);
  if (averageRps < ((value('rps_threshold') as number | undefined) ?? 0)) return 0;
  const sr = Math.min((value('sr_threshold') as Json | undefined)?.value as number, 100) / 100;
  const aggression = Math.max(1, (value('aggression') as number | undefined) ?? 1);
  let p = (requests - successes / sr) / (requests + 1);
  if (aggression !== 1) p = p ** (1 / aggression);
  const max = ((value('max_rejection_probability') as Json | undefined)?.value as number) / 100;
  return Math.max(0, Math.min(p, max));
}
