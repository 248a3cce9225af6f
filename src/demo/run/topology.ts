import { COCKATIEL_DEFAULTS, DEMO_DEFAULTS, NAIVE_DEFAULTS, PRAZO_STACK_DEFAULTS } from '../constants.js';
import type { Child, ProcessGroup } from '../process/children.js';
import { behaviourOf, SCENARIOS } from '../scenarios.js';
import type { HopSettings, Scenario, ServiceConfig, StackName } from '../types.js';
import type { HopName } from './calibration.js';
import type { DemoSettings } from './options.js';

/**
 * One stack's chain of processes: supplier instances, inventory, orders, gateway, each a separate
 * Node process on 127.0.0.1 with an ephemeral port. They are forked early (booting Node is the slow
 * part), started from the supplier up (each needs the ports of the next hop), warmed up, and then
 * live for the whole demo, reset before each scenario, as long-running services would.
 */
export interface SpawnedStack {
  readonly stack: StackName;
  readonly children: readonly { readonly role: ServiceConfig['role']; readonly child: Child }[];
}

export interface RunningStack extends SpawnedStack {
  readonly gatewayOrigin: string;
  /** Where orders listens (the calibration measures the gateway → orders hop from outside). */
  readonly ordersOrigin: string;
}

const origin = (port: number): string => `http://127.0.0.1:${port}`;
const HEALTHY = SCENARIOS.find((s) => s.name === 'healthy')!;

/** The latencies the prazo stack is configured with, per hop (a calibration, or a config file). */
export type HopLatencies = Readonly<
  Record<
    HopName,
    { readonly p99Ms: number; readonly p95Ms: number; readonly p50Ms?: number; readonly hedgeMs?: number }
  >
>;

/** What a drill changes in a stack: the supplier replaced by a double, naive's timeout. */
export interface StackOverrides {
  /** Origins inventory calls instead of supplier processes (none are started then). */
  readonly supplierOrigins?: readonly string[];
  /** The naive stack's per-attempt timeout, in ms (default 3000). */
  readonly naiveTimeoutMs?: number;
}

/** The client settings of `stack` on the hop to `next` (prazo: from the calibration). */
export function hopSettings(
  stack: StackName,
  next: HopName,
  calibration: HopLatencies | undefined,
  overrides: StackOverrides = {},
  poolConnections: number = DEMO_DEFAULTS.poolConnections,
): HopSettings {
  if (stack === 'naive') {
    return { stack, ...NAIVE_DEFAULTS, timeoutMs: overrides.naiveTimeoutMs ?? NAIVE_DEFAULTS.timeoutMs };
  }
  if (stack === 'cockatiel') return { stack, ...COCKATIEL_DEFAULTS };
  const P = PRAZO_STACK_DEFAULTS;
  const measured = calibration?.[next];
  if (measured === undefined) throw new Error(`prazo stack: no calibration for ${next}`);
  return {
    stack,
    p99Ms: measured.p99Ms,
    p95Ms: measured.p95Ms,
    ...(measured.p50Ms === undefined ? {} : { p50Ms: measured.p50Ms }),
    ...(measured.hedgeMs === undefined ? {} : { hedgeMs: measured.hedgeMs }),
    attempts: P.attempts,
    hedge: next === 'supplier', // reads of the tail-prone dependency (SPEC H1, H2)
    budget: { windowMs: P.budgetWindowMs, ratio: P.budgetRatio, minPerSecond: P.budgetMinPerSecond },
    capacity: hopCapacity(next, poolConnections),
  };
}

/**
 * What each prazo hop of the checkout chain may hold in flight (capacity-aware waiting, issue 23).
 * The resource at stake is the gateway's pool: every checkout in flight anywhere below holds one of
 * its connections. The gateway's checkout client (a bulkhead: the catalog has its own client on the
 * same pool, `roles.ts`) holds at most the pool less the catalog's reserve, so past that a checkout
 * is refused at the gateway itself, before it takes a connection, in a millisecond. It lets 3 wait
 * for a slot (a waiting call holds no connection, and gives up when its attempt no longer fits its
 * deadline): healthy traffic at 100/s comes in bursts, and with no queue the few checkouts arriving
 * while all 13 were in flight were refused, 1–2.3 % of healthy checkouts (the demo's healthy bar is
 * 99 %); under an incident, 3 more wait and the rest are still refused at once.
 * The hops below must never refuse what the gateway let through (a refusal two hops down costs the
 * same connection and three hops of work): orders' calls are the gateway's one for one, but the
 * inventory's limit counts attempts, and the supplier's hedges are attempts too. So the inventory
 * holds as many originals plus the hedges its retry budget can pay while they are in flight (its
 * ratio of them, and the floor's whole window). Traced before (`hung`, every hop at 13): 10 checkouts
 * and their 3 hedges filled the inventory's 13, and every later checkout went through three hops to
 * be refused CONCURRENCY_LIMITED there (5–50 ms on a loaded machine, not 1).
 */
export function hopCapacity(
  next: HopName,
  poolConnections: number,
): { readonly maxInFlight: number; readonly maxQueue: number } {
  const P = PRAZO_STACK_DEFAULTS;
  const chain = Math.max(1, poolConnections - P.poolReserve);
  const hedges =
    next === 'supplier'
      ? Math.ceil(chain * P.budgetRatio) + Math.ceil((P.budgetMinPerSecond * P.budgetWindowMs) / 1_000)
      : 0;
  return { maxInFlight: chain + hedges, maxQueue: next === 'orders' ? P.gatewayQueue : 0 };
}

/**
 * The prazo stack's local ceiling of each service (SPEC D2): the gateway's deadline, and below it
 * each hop's ending `hopMarginMs` before its caller's (orders 1,850 ms, inventory 1,800 ms). A call
 * that waits to the end (a patient attempt on a hung supplier) is then ended by the hop below
 * answering 504, which keeps its caller's connection, rather than by the caller's own deadline
 * aborting the request, which destroys it (an HTTP/1.1 request in flight cannot be cancelled
 * otherwise): with one deadline at every hop, the gateway's patient checkouts all ended in aborts at
 * once and their connections were reopened under load while new checkouts already held their slots.
 */
export function serviceCeilingMs(role: 'gateway' | 'orders' | 'inventory'): number {
  const P = PRAZO_STACK_DEFAULTS;
  const depth = { gateway: 0, orders: 1, inventory: 2 }[role];
  return role === 'gateway'
    ? P.gatewayDeadlineMs
    : Math.min(P.serviceMaxMs, P.gatewayDeadlineMs - depth * P.hopMarginMs);
}

/** Forks (and waits for the boot of) every process of a stack. */
export async function spawnStack(
  group: ProcessGroup,
  stack: StackName,
  settings: Pick<DemoSettings, 'supplierInstances'>,
): Promise<SpawnedStack> {
  const n = settings.supplierInstances;
  const roles: ServiceConfig['role'][] = [
    ...Array<'supplier'>(n).fill('supplier'),
    'inventory',
    'orders',
    'gateway',
  ];
  const children = await Promise.all(
    roles.map((role, i) =>
      group.spawn(role === 'supplier' ? `${stack}/supplier-${i + 1}` : `${stack}/${role}`),
    ),
  );
  return { stack, children: roles.map((role, i) => ({ role, child: children[i]! })) };
}

/** Starts a spawned stack, healthy, from the supplier up. */
export async function startStack(
  group: ProcessGroup,
  spawned: SpawnedStack,
  settings: Pick<DemoSettings, 'seed' | 'bucketMs' | 'poolConnections'>,
  calibration: HopLatencies | undefined,
  overrides: StackOverrides = {},
): Promise<RunningStack> {
  const { stack } = spawned;
  const childOf = (role: ServiceConfig['role']): Child =>
    spawned.children.find((c) => c.role === role)!.child;
  const suppliers = spawned.children.filter((c) => c.role === 'supplier');
  const supplierPorts = await Promise.all(
    suppliers.map(({ child }, i) =>
      group.start(child, {
        role: 'supplier',
        stack,
        instance: i,
        behaviour: behaviourOf(HEALTHY, i),
        seed: settings.seed * 1_000 + i,
      }),
    ),
  );
  const prazo = stack === 'prazo';
  const common = { stack, bucketMs: settings.bucketMs };
  const inner = (role: 'orders' | 'inventory') =>
    prazo ? { deadline: { defaultMs: serviceCeilingMs(role), maxMs: serviceCeilingMs(role) } } : {};
  const inventoryPort = await group.start(childOf('inventory'), {
    role: 'inventory',
    ...common,
    ...inner('inventory'),
    downstream: overrides.supplierOrigins ?? supplierPorts.map(origin),
    hop: hopSettings(stack, 'supplier', calibration, overrides, settings.poolConnections),
  });
  const ordersPort = await group.start(childOf('orders'), {
    role: 'orders',
    ...common,
    ...inner('orders'),
    downstream: [origin(inventoryPort)],
    hop: hopSettings(stack, 'inventory', calibration, overrides, settings.poolConnections),
  });
  const gatewayPort = await group.start(childOf('gateway'), {
    role: 'gateway',
    ...common,
    ...(prazo
      ? { deadline: { defaultMs: serviceCeilingMs('gateway'), maxMs: serviceCeilingMs('gateway') } }
      : {}),
    downstream: [origin(ordersPort)],
    hop: hopSettings(stack, 'orders', calibration, overrides, settings.poolConnections),
    poolConnections: settings.poolConnections,
  });
  return { ...spawned, gatewayOrigin: origin(gatewayPort), ordersOrigin: origin(ordersPort) };
}

/** Resets a running stack for `scenario`: services first (cutting lingering work), then the suppliers. */
export async function resetStack(
  group: ProcessGroup,
  running: RunningStack,
  scenario: Scenario,
): Promise<void> {
  await resetServices(group, running);
  await resetSuppliers(group, running, scenario);
}

/** Resets the services (gateway, orders, inventory): fresh pools, budgets, windows; lingering work cut. */
export async function resetServices(group: ProcessGroup, running: RunningStack): Promise<void> {
  await Promise.all(
    running.children.filter((c) => c.role !== 'supplier').map(({ child }) => group.reset(child, {})),
  );
}

/** Gives the supplier instances `scenario`'s behaviour (an outage's clock starts here). */
export async function resetSuppliers(
  group: ProcessGroup,
  running: RunningStack,
  scenario: Scenario,
): Promise<void> {
  const suppliers = running.children.filter((c) => c.role === 'supplier');
  await Promise.all(
    suppliers.map(({ child }, i) => group.reset(child, { behaviour: behaviourOf(scenario, i) })),
  );
}
