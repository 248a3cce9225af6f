/**
 * Latency budgets per endpoint (SPEC B1–B3), after the seed's `orcamento_latencia` for POST /pedidos:
 * the endpoint's SLO split into named slices, one per component on its path.
 */

/**
 * How a component's latency behaves. Remote calls (`remote`, alias `long-tail`) have long tails and
 * need the larger slices; `local` (alias `deterministic`) work — routing, validation, serialization —
 * is predictable.
 */
export type ComponentKind = 'remote' | 'local';

export interface BudgetComponent {
  readonly name: string;
  readonly kind: ComponentKind;
  /** The component's slice of the SLO, in ms. */
  readonly sliceMs: number;
  /** For a remote component: the configured dependency it calls (its timeouts derive from the slice). */
  readonly dependency?: string;
}

export interface LatencyBudget {
  /** The endpoint, e.g. `POST /pedidos`. */
  readonly endpoint: string;
  /** The endpoint's latency SLO (its p99 target), in ms. */
  readonly totalSloMs: number;
  readonly components: readonly BudgetComponent[];
}

export type Severity = 'error' | 'warning';

/** A problem found in a budget; `path` points into the raw input (keys and list indexes). */
export interface BudgetProblem {
  readonly path: readonly (string | number)[];
  readonly message: string;
  readonly severity: Severity;
}
