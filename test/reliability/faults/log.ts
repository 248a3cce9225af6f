/**
 * What a fault server saw: one entry per request head it received (SPEC R5 evidence). The matrix and
 * the soak judge "never duplicates a write" from here, on the server side, not from what the client
 * believes it sent.
 *
 * A logical call is identified by its path (`/call/<id>`): the client under test may retry or hedge,
 * but every copy of one logical call carries the same path. A non-idempotent request (POST, PATCH)
 * without an `idempotency-key` seen twice on the same path is a duplicated write.
 */

export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  /** The `idempotency-key` header, when the request carried one. */
  readonly key: string | undefined;
  /** The `x-deadline-epoch-ms` header as received, when present (deadline propagation evidence). */
  readonly deadlineHeader: string | undefined;
  /** Monotonic ms (performance.now) when the request head was complete. */
  readonly at: number;
}

/** Methods that are idempotent by definition (RFC 9110 §9.2.2), as SPEC R5 lists them. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);

type HeaderBag = Readonly<Record<string, string | string[] | undefined>>;

const first = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : value;

export class RequestLog {
  readonly #seen: SeenRequest[] = [];
  readonly #perPath = new Map<string, number>();

  record(method: string, path: string, headers: HeaderBag, at = performance.now()): SeenRequest {
    const entry: SeenRequest = {
      method: method.toUpperCase(),
      path,
      key: first(headers['idempotency-key']),
      deadlineHeader: first(headers['x-deadline-epoch-ms']),
      at,
    };
    this.#seen.push(entry);
    this.#perPath.set(path, (this.#perPath.get(path) ?? 0) + 1);
    return entry;
  }

  /** Every request, in arrival order. */
  get all(): readonly SeenRequest[] {
    return this.#seen;
  }

  get total(): number {
    return this.#seen.length;
  }

  /** How many requests had this method (and, when given, this path). */
  count(method?: string, path?: string): number {
    const m = method?.toUpperCase();
    return this.#seen.filter(
      (r) => (m === undefined || r.method === m) && (path === undefined || r.path === path),
    ).length;
  }

  /** How many copies of one logical call arrived. */
  copies(path: string): number {
    return this.#perPath.get(path) ?? 0;
  }

  /** Requests per idempotency key (retries and hedges of a keyed write share one key). */
  byKey(): ReadonlyMap<string, number> {
    const out = new Map<string, number>();
    for (const r of this.#seen) if (r.key !== undefined) out.set(r.key, (out.get(r.key) ?? 0) + 1);
    return out;
  }

  /**
   * Extra copies of non-idempotent, unkeyed requests: for each path, (copies - 1). Must be 0 (SPEC R5).
   */
  duplicateWrites(): number {
    const perPath = new Map<string, number>();
    for (const r of this.#seen) {
      if (IDEMPOTENT.has(r.method) || r.key !== undefined) continue;
      perPath.set(r.path, (perPath.get(r.path) ?? 0) + 1);
    }
    let extra = 0;
    for (const n of perPath.values()) extra += n - 1;
    return extra;
  }

  /** Counts grouped as `METHOD` or `METHOD+key`, for a results table. */
  summary(): string {
    const groups = new Map<string, number>();
    for (const r of this.#seen) {
      const label = r.key === undefined ? r.method : `${r.method}+key`;
      groups.set(label, (groups.get(label) ?? 0) + 1);
    }
    return [...groups].map(([k, v]) => `${k}:${v}`).join(' ') || '-';
  }

  clear(): void {
    this.#seen.length = 0;
    this.#perPath.clear();
  }
}
