import type { QueryResult, QueryResultRow } from 'pg';

/**
 * What prazo needs of node-postgres, structurally (pg is an optional peer: only its types are
 * imported). A `pg.Client` and a `pg.PoolClient` satisfy {@link PgClient}; a `pg.Pool` satisfies
 * {@link PgPool}.
 */
export interface PgClient {
  query<R extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[]): Promise<QueryResult<R>>;
  /** The backend's process id and secret key, for cancel requests (set once connected). */
  readonly processID?: number | null;
  readonly secretKey?: number | null;
  readonly host?: string;
  readonly port?: number;
  /** 'I' idle, 'T' in a transaction, 'E' in a failed transaction (pg >= 8.21 exposes it). */
  getTransactionStatus?(): string | null;
}

export interface PgPoolClient extends PgClient {
  release(destroy?: boolean | Error): void;
}

export interface PgPool {
  connect(): Promise<PgPoolClient>;
  readonly totalCount: number;
}

/** True for a pool (it hands out clients), false for a client. */
export function isPool(target: PgClient | PgPool): target is PgPool {
  return (
    typeof (target as PgPool).connect === 'function' &&
    typeof (target as PgPool).totalCount === 'number' &&
    typeof (target as PgClient).query === 'function' &&
    !('processID' in target)
  );
}
