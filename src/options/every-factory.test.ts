import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isInvalidOptions } from '../errors/guards.js';

/**
 * Every public function of every entry point, given an options object with a misspelt key, refuses
 * it with INVALID_OPTIONS and the key it was meant to be (#14 item 5). The entry points and their
 * names are read from package.json and the modules themselves, so a new export without a row here
 * fails: a factory cannot forget its options, and a function without options says why it has none.
 */

type Fn = (...args: never[]) => unknown;
type Call = (module: Record<string, Fn>) => unknown;

const REPO = new URL('../../', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', REPO), 'utf8')) as {
  exports: Record<string, string | { default?: string }>;
};
/** `./dist/server/index.js` → `src/server/index.ts` (the source each entry is built from). */
const entries = Object.entries(pkg.exports)
  .filter(([, t]) => typeof t !== 'string' && t.default !== undefined)
  .map(([subpath, t]) => ({
    subpath,
    source: new URL(
      (t as { default: string }).default.replace('./dist/', 'src/').replace(/\.js$/, '.ts'),
      REPO,
    ),
  }));

const budget = {
  endpoint: 'GET /x',
  totalSloMs: 100,
  components: [{ name: 'a', kind: 'remote', sliceMs: 100 }],
};
const window = { count: 1_000, errors: 0, timeouts: 0, p99: 10 };
const source = { record: () => {}, quantile: () => 5 };
const histogram = 'x_bucket{le="10"} 100\nx_bucket{le="+Inf"} 100\n';
const pg = { query: () => Promise.resolve({ rows: [] }), getTransactionStatus: () => 'I' };
const mysql = { query: () => Promise.resolve([[]]), threadId: 1, _handshakePacket: { serverVersion: '8.4' } };
const grpcHandler = () => {};

/**
 * One misspelt call per function: the call, and the name the refusal must suggest. The misspelling
 * is a real one (case, a letter, a plural) of an option the function really has.
 */
const CASES: Record<string, readonly [Call, string]> = {
  // prazo
  calibrateTimeout: [(m) => m.calibrateTimeout!({ p99Ms: 10, attempt: 2 } as never), 'attempts'],
  callWithDeadline: [
    (m) =>
      m.callWithDeadline!(
        m.__deadline as never,
        { name: 'x', p99Ms: 1, execute: async () => 1, p99: 1 } as never,
      ),
    'p99Ms',
  ],
  createDependency: [(m) => m.createDependency!({ name: 'x', p99Ms: 10, attempt: 5 } as never), 'attempts'],
  'createDependency().execute': [
    (m) =>
      (m.createDependency!({ name: 'x', p99Ms: 10 } as never) as { execute: Fn }).execute(
        (async () => 1) as never,
        { idempotent: true, idempotencykey: 'k' } as never,
      ),
    'idempotencyKey',
  ],
  createLatencyRecorder: [(m) => m.createLatencyRecorder!({ windowMS: 1_000 } as never), 'windowMs'],
  createRetryBudget: [(m) => m.createRetryBudget!({ maxratio: 0.2 } as never), 'maxRatio'],
  deadlineFromHeaders: [(m) => m.deadlineFromHeaders!({} as never, { maxMS: 2_000 } as never), 'maxMs'],
  'Deadline.after': [
    (m) => (m.Deadline as unknown as { after: Fn }).after(1 as never, { clok: 1 } as never),
    'clock',
  ],
  'Deadline.at': [(m) => (m.Deadline as unknown as { at: Fn }).at(1 as never, { clok: 1 } as never), 'clock'],
  // prazo/calibrate
  calibrateFromDistribution: [
    (m) => m.calibrateFromDistribution!({ ...window, p99Bounded: true } as never, { atempts: 2 } as never),
    'attempts',
  ],
  checkDrift: [
    (m) => m.checkDrift!({ timeoutMs: 10, window, maxAbandonrate: 0.1 } as never),
    'maxAbandonRate',
  ],
  checkPool: [(m) => m.checkPool!({ poolSize: 1, rps: 1, timeoutMs: 1, rpss: 1 } as never), 'rps'],
  createDriftMonitor: [
    (m) => m.createDriftMonitor!({ timeoutMs: 10, onchange: () => {} } as never),
    'onChange',
  ],
  createHealthyWindowTracker: [
    (m) => m.createHealthyWindowTracker!({ baselineWindow: 3 } as never),
    'baselineWindows',
  ],
  createOverrunTracker: [(m) => m.createOverrunTracker!({ budget, windowMS: 1_000 } as never), 'windowMs'],
  createSliceRunner: [(m) => m.createSliceRunner!({ budget, tracer: {} } as never), 'tracker'],
  parseCsv: [(m) => m.parseCsv!('latency_ms\n1\n' as never, { colum: 'latency_ms' } as never), 'column'],
  parsePrometheus: [(m) => m.parsePrometheus!(histogram as never, { metrics: 'x' } as never), 'metric'],
  readLatencySource: [
    (m) => m.readLatencySource!(histogram as never, { formats: 'prometheus' } as never),
    'format',
  ],
  resolveHealthThresholds: [
    (m) => m.resolveHealthThresholds!({ maxErrorrate: 0.1 } as never),
    'maxErrorRate',
  ],
  parseBudget: [
    (m) => {
      const parsed = m.parseBudget!({ endpoint: 'GET /x', total_slo_ms: 100, component: [] } as never) as {
        problems: { message: string }[];
      };
      return parsed.problems.map((p) => p.message).join('\n');
    },
    'components',
  ],
  deriveTimeouts: [
    (m) => {
      const profiles = new Map([['inv', { p99Ms: 10, atempts: 2 }]]);
      const budgetWithDep = { ...budget, components: [{ ...budget.components[0], dependency: 'inv' }] };
      const derived = m.deriveTimeouts!(budgetWithDep as never, profiles as never) as {
        problems: { message: string }[];
      };
      return derived.problems.map((p) => p.message).join('\n');
    },
    'attempts',
  ],
  // prazo/config
  checkConfigText: [(m) => m.checkConfigText!('dependencies: []' as never, { files: 'x' } as never), 'file'],
  watchConfig: [
    (m) =>
      m.watchConfig!(
        new URL('examples/prazo.config.yaml', REPO).pathname as never,
        {
          onchange: () => {},
        } as never,
      ),
    'onChange',
  ],
  // prazo/retry
  classifyFailure: [
    (m) => m.classifyFailure!(new Error('x') as never, { nowEpochMS: 0 } as never),
    'nowEpochMs',
  ],
  createHedgePolicy: [
    (m) => m.createHedgePolicy!(source as never, { percentil: 0.9 } as never),
    'percentile',
  ],
  isRetryable: [
    (m) => m.isRetryable!(new Error('x') as never, { retryResponseTimeouts: true } as never),
    'retryResponseTimeout',
  ],
  // prazo/server
  createDeadlineReader: [(m) => m.createDeadlineReader!({ maxMS: 2_000 } as never), 'maxMs'],
  deadlineMiddleware: [(m) => m.deadlineMiddleware!({ defaultMS: 100 } as never), 'defaultMs'],
  readIncomingDeadline: [
    (m) => m.readIncomingDeadline!({} as never, { clockSkew: 1 } as never),
    'clockSkewMs',
  ],
  withIncomingDeadline: [
    (m) => m.withIncomingDeadline!((() => {}) as never, { maxMS: 2_000 } as never),
    'maxMs',
  ],
  // prazo/fastify: a plugin refuses through `done`
  fastifyDeadline: [
    (m) =>
      new Promise((_resolve, reject) => {
        const instance = { decorateRequest: () => {}, addHook: () => {} };
        m.fastifyDeadline!(
          instance as never,
          { maxMS: 2_000 } as never,
          ((error: unknown) => reject(error)) as never,
        );
      }),
    'maxMs',
  ],
  // prazo/grpc
  deadlineInterceptor: [(m) => m.deadlineInterceptor!({ p99: 10 } as never), 'p99Ms'],
  withGrpcDeadline: [(m) => m.withGrpcDeadline!(grpcHandler as never, { maxMS: 2_000 } as never), 'maxMs'],
  // prazo/connect
  connectClientInterceptor: [(m) => m.connectClientInterceptor!({ dependancy: {} } as never), 'dependency'],
  connectServerInterceptor: [(m) => m.connectServerInterceptor!({ maxMS: 2_000 } as never), 'maxMs'],
  pushbackAnswer: [
    (m) => m.pushbackAnswer!(new Error('x') as never, { retryAfter: 2 } as never),
    'retryAfterS',
  ],
  // prazo/pg
  queryWithDeadline: [
    (m) => m.queryWithDeadline!(pg as never, 'select 1' as never, [] as never, { p99: 1 } as never),
    'p99Ms',
  ],
  transactionWithDeadline: [
    (m) => m.transactionWithDeadline!(pg as never, (async () => 1) as never, { cancelGrace: 1 } as never),
    'cancelGraceMs',
  ],
  pgDeadlinePool: [
    (m) =>
      m.pgDeadlinePool!({ connect: () => 1, totalCount: 0, query: () => 1 } as never, { p99: 1 } as never),
    'p99Ms',
  ],
  pgDeadlineKnex: [
    (m) =>
      m.pgDeadlineKnex!(
        { client: { driverName: 'pg', acquireConnection: () => 1, releaseConnection: () => 1 } } as never,
        { cancelGrace: 1 } as never,
      ),
    'cancelGraceMs',
  ],
  // prazo/mysql
  mysqlQuery: [
    (m) => m.mysqlQuery!(mysql as never, 'select 1' as never, [] as never, { p99: 1 } as never),
    'p99Ms',
  ],
  mysqlTransaction: [
    (m) => m.mysqlTransaction!(mysql as never, (async () => 1) as never, { killvia: mysql } as never),
    'killVia',
  ],
  mysqlDeadlinePool: [
    (m) => m.mysqlDeadlinePool!({ getConnection: () => 1, query: () => 1 } as never, { p99: 1 } as never),
    'p99Ms',
  ],
  knexWithDeadline: [
    (m) =>
      m.knexWithDeadline!(
        {
          client: {
            config: { client: 'mysql2' },
            _query: () => 1,
            acquireConnection: () => 1,
            cancelQuery: () => 1,
          },
        } as never,
        { cancelGrace: 1 } as never,
      ),
    'cancelGraceMs',
  ],
  // prazo/redis
  redisDeadlineClient: [
    (m) => m.redisDeadlineClient!({ call: () => 1, duplicate: () => 1 } as never, { p99: 1 } as never),
    'p99Ms',
  ],
  // prazo/otel
  instrumentPrazo: [(m) => m.instrumentPrazo!({ dependency: [] } as never), 'dependencies'],
  // prazo/rules
  generateAlertRules: [
    (m) => m.generateAlertRules!({ dependencies: [] } as never, { nameing: 'otlp' } as never),
    'naming',
  ],
  generateDashboard: [
    (m) => m.generateDashboard!({ dependencies: [{ name: 'x', maxratio: 1 }] } as never),
    'maxRatio',
  ],
  // prazo/testing
  FakeClock: [(m) => new (m.FakeClock as unknown as new (o: unknown) => unknown)({ epoc: 1 }), 'epoch'],
  // prazo/http (#13 adapts its validation to the shared declarations: the suggestion comes with it)
  interceptor: [
    (m) =>
      m.interceptor!({
        dependencies: { 'http://127.0.0.1:1': { name: 'x', p99Ms: 10, atempts: 2 } },
      } as never),
    'attempts',
  ],
  createHttpClient: [
    (m) =>
      m.createHttpClient!({
        name: 'x',
        origin: 'http://127.0.0.1:1',
        p99Ms: 10,
        conectTimeoutMs: 5,
      } as never),
    'connectTimeoutMs',
  ],
  'createHttpClient(ejection)': [
    (m) =>
      m.createHttpClient!({
        name: 'x',
        origins: ['http://127.0.0.1:1', 'http://127.0.0.1:2'],
        p99Ms: 10,
        ejection: { consecutiveFailure: 3 },
      } as never),
    'consecutiveFailures',
  ],
  'createHttpClient(concurrencyLimit)': [
    (m) =>
      m.createHttpClient!({
        name: 'x',
        origin: 'http://127.0.0.1:1',
        p99Ms: 10,
        concurrencyLimit: { maxInFligt: 3 },
      } as never),
    'maxInFlight',
  ],
};

/** Exported functions and classes that take no options object, and why. */
const NO_OPTIONS: Record<string, string> = {
  currentDeadline: 'no argument',
  runWithDeadline: 'a deadline and a function',
  isPrazoError: 'a guard',
  isTimeoutError: 'a guard',
  isDeadlineExceeded: 'a guard',
  isDeadlineInsufficient: 'a guard',
  isConnectTimeout: 'a guard',
  isResponseTimeout: 'a guard',
  isBodyTimeout: 'a guard',
  isRetryBudgetExhausted: 'a guard',
  isConnectFailed: 'a guard',
  isConcurrencyLimited: 'a guard',
  isThrottled: 'a guard',
  isNoInstance: 'a guard',
  isClientClosed: 'a guard',
  isDependencyFailed: 'a guard',
  isInvalidOptions: 'a guard',
  isDeadlineError: 'a guard',
  isQueryCanceled: 'a guard',
  isStatementInterrupted: 'a guard',
  createStoreEvents: 'takes a name only',
  createPgEvents: 'takes a name only',
  mysqlOptionsFrom: 'reads a config entry (validated by loadConfig)',
  redisOptionsFrom: 'reads a config entry (validated by loadConfig)',
  suggestConcurrencyLimit: 'two numbers (rate, p99 in ms); undefined for any that is not finite and positive',
  isQueueTimeout: 'a guard',
  PrazoError: 'an error class: a code and a message',
  DeadlineExceededError: 'an error class: its details',
  DeadlineInsufficientError: 'an error class: its details',
  PhaseTimeoutError: 'an abstract error class',
  ConnectTimeoutError: 'an error class: its details',
  ResponseTimeoutError: 'an error class: its details',
  BodyTimeoutError: 'an error class: its details',
  QueueTimeoutError: 'an error class: its details',
  ConnectFailedError: 'an error class: its details',
  RetryBudgetExhaustedError: 'an error class: its details',
  ConcurrencyLimitError: 'an error class: its details',
  ThrottledError: 'an error class: its details',
  NoInstanceError: 'an error class: its details',
  ClientClosedError: 'an error class: its details',
  DependencyFailedError: 'an error class: its details',
  InvalidOptionsError: 'an error class: a context and problems',
  SourceError: 'an error class: a line and a message',
  ConfigRejectedError: 'an error class: its details',
  Deadline: 'constructed through Deadline.after / Deadline.at (rows above)',
  assessWindow: 'judges a window with thresholds already resolved by resolveHealthThresholds (row above)',
  validateBudget: 'a parsed budget (parseBudget, row above)',
  parseSampleList: 'a text and a unit',
  startingP99Ms: 'a kind of call',
  implausibleP99: 'a p99, a kind of call and which words to use',
  checkConfigFile: 'a path',
  loadConfig: 'a path',
  formatProblem: 'a problem',
  generateIdempotencyKey: 'no argument',
  isIdempotentMethod: 'a method',
  isIdempotentRequest: 'a method and headers',
  isValidIdempotencyKey: 'a key',
  markResponseStarted: 'an error',
  parseRetryAfter: 'a header value and a time',
  retryAfterMs: 'a status, headers and a time',
  parsePushback: 'a header value',
  readPushback: 'headers or gRPC metadata',
  ServerEventHub: 'a hub: no options',
  createServerEventHub: 'no argument',
  createServerStats: 'a hub',
  deadlineErrorHandler: 'no argument',
  onServerEvent: 'a listener',
  deadlineStatus: 'an error',
  prazoErrorOf: 'an error',
  toGrpcError: 'an error',
  isIdempotentProcedure: 'a method descriptor',
  toConnectError: 'an error',
  toConnectServerError: 'an error (and whether to push back)',
  isReplayableBody: 'a body',
  statusOutcome: 'a status',
  renderAlertRules: 'a rule file and a name',
  rulesInputFromConfig: 'a loaded config',
  seededRandom: 'a seed',
};

/** Functions whose refusal names the key without a suggestion yet (none left). */
const PENDING_SUGGESTION = new Set<string>();

async function refusal(call: Call, module: Record<string, Fn>): Promise<string> {
  let outcome: unknown;
  try {
    outcome = await call(module);
  } catch (error) {
    if (!isInvalidOptions(error)) throw error;
    return error.problems.join('\n');
  }
  return typeof outcome === 'string' ? outcome : `no refusal: resolved with ${String(outcome)}`;
}

describe('every public factory refuses a misspelt option, with a "did you mean" (#14)', async () => {
  const modules = await Promise.all(
    entries.map(async (e) => ({ ...e, module: (await import(e.source.href)) as Record<string, Fn> })),
  );
  const root = modules.find((m) => m.subpath === '.')!.module;
  const deadline = (root.Deadline as unknown as { after(ms: number): unknown }).after(1_000);

  it('has a row for every exported function and class of every entry point', () => {
    const missing: string[] = [];
    for (const { subpath, module } of modules) {
      for (const [name, value] of Object.entries(module)) {
        if (typeof value !== 'function') continue;
        const rows = Object.keys(CASES).filter(
          (k) => k === name || k.startsWith(`${name}.`) || k.startsWith(`${name}(`),
        );
        if (rows.length === 0 && !(name in NO_OPTIONS)) missing.push(`${subpath}: ${name}`);
      }
    }
    expect(missing, 'add a misspelt-key case (or the reason it takes no options)').toEqual([]);
  });

  for (const [name, [call, meant]] of Object.entries(CASES)) {
    it(name, async () => {
      const base = name.split(/[.(]/)[0]!;
      const home = modules.find((m) => typeof m.module[base] === 'function');
      expect(home, `${base} is exported by no entry point`).toBeDefined();
      const text = await refusal(call, { ...home!.module, __deadline: deadline as Fn });
      if (PENDING_SUGGESTION.has(name)) expect(text).toMatch(/unknown option/);
      else expect(text).toContain(`did you mean \`${meant}\`?`);
    });
  }
});
