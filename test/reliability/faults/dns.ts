import type { LookupAddress, LookupOptions } from 'node:dns';

/**
 * Slow DNS, as a resolver stub: a `lookup` function with the signature of `dns.lookup`, which
 * `net.connect` (and so undici's connector) accepts as its `lookup` option. It answers 127.0.0.1
 * (only ever loopback) for `host` after `delayMs`, and counts the lookups it served; any other
 * name fails with ENOTFOUND. Its timers are cleared by `close()`.
 */
export interface SlowResolver {
  readonly host: string;
  readonly lookups: () => number;
  readonly lookup: (
    hostname: string,
    options: LookupOptions,
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ) => void;
  close(): void;
}

export function slowResolver(delayMs: number, host = 'slow-dns.prazo.test'): SlowResolver {
  let lookups = 0;
  const timers = new Set<NodeJS.Timeout>();
  const lookup: SlowResolver['lookup'] = (hostname, options, callback) => {
    lookups += 1;
    const t = setTimeout(() => {
      timers.delete(t);
      if (hostname !== host) {
        const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
        err.code = 'ENOTFOUND';
        callback(err, '', undefined);
      } else if (options?.all) callback(null, [{ address: '127.0.0.1', family: 4 }]);
      else callback(null, '127.0.0.1', 4);
    }, delayMs);
    timers.add(t);
  };
  return {
    host,
    lookups: () => lookups,
    lookup,
    close: () => {
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
  };
}
