/**
 * Blocking commands carry their own server-side timeout; prazo rewrites it so that the *server*
 * answers before the deadline (SPEC D7). A blocking command the client merely stops waiting for
 * keeps its connection blocked on the server: every command written after it on that connection
 * waits behind it for the full block. With the block ending on the server first, its reply (a nil:
 * "nothing arrived in time") comes back in time and the connection is free for the next command.
 *
 * Where the timeout sits and its unit, per command (Redis 6.0+ accepts fractional seconds):
 * - BLPOP, BRPOP, BZPOPMIN, BZPOPMAX, BRPOPLPUSH, BLMOVE: the last argument, seconds, 0 = forever;
 * - BLMPOP, BZMPOP: the first argument, seconds;
 * - XREAD, XREADGROUP: `BLOCK <ms>` among the options, 0 = forever; absent = not blocking;
 * - WAIT, WAITAOF: the last argument, ms, 0 = forever.
 */

import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';

type Arg = string | number | Buffer;

/**
 * The block, in ms, the server may spend: what is left minus a margin for the reply's way back, at
 * least 1 (0 would mean "forever"), at most 2^31-1 (an endless deadline blocks ~24.8 days, not NaN).
 */
export function serverBlockMs(remainingMs: number, marginMs: number): number {
  const ms = Math.floor(remainingMs - marginMs);
  return ms > MAX_TIMER_DELAY_MS ? MAX_TIMER_DELAY_MS : ms >= 1 ? ms : 1;
}

const LAST_SECONDS = new Set(['blpop', 'brpop', 'bzpopmin', 'bzpopmax', 'brpoplpush', 'blmove']);
const FIRST_SECONDS = new Set(['blmpop', 'bzmpop']);
const LAST_MS = new Set(['wait', 'waitaof']);
const STREAM_READS = new Set(['xread', 'xreadgroup']);

/** Seconds with ms precision, as Redis reads a fractional timeout. */
const seconds = (ms: number): string => (ms / 1000).toFixed(3);

/** The block the caller asked for, in ms (Infinity for "forever"); NaN for an unreadable value. */
function askedMs(value: Arg | undefined, unit: 'ms' | 's'): number {
  const n = Number(typeof value === 'object' ? value.toString() : value);
  if (!Number.isFinite(n) || n < 0) return Number.NaN;
  if (n === 0) return Number.POSITIVE_INFINITY;
  return unit === 's' ? n * 1000 : n;
}

export interface BoundedCommand {
  readonly args: readonly Arg[];
  /** True when the command blocks on the server and its block was bounded by the deadline. */
  readonly blocking: boolean;
}

/**
 * `args` with the block bounded by `blockMs` (the shorter of the two wins; an unreadable timeout is
 * left for the server to refuse). Any other command comes back as given.
 */
export function boundBlocking(command: string, args: readonly Arg[], blockMs: number): BoundedCommand {
  const name = command.toLowerCase();
  const replace = (index: number, unit: 'ms' | 's'): BoundedCommand => {
    const asked = askedMs(args[index], unit);
    if (Number.isNaN(asked)) return { args, blocking: true };
    if (asked <= blockMs) return { args, blocking: true };
    const copy = [...args];
    copy[index] = unit === 's' ? seconds(blockMs) : String(blockMs);
    return { args: copy, blocking: true };
  };
  if (LAST_SECONDS.has(name) && args.length > 0) return replace(args.length - 1, 's');
  if (FIRST_SECONDS.has(name) && args.length > 0) return replace(0, 's');
  if (LAST_MS.has(name) && args.length > 0) return replace(args.length - 1, 'ms');
  if (STREAM_READS.has(name)) {
    const streams = args.findIndex((a) => String(a).toLowerCase() === 'streams');
    const options = streams === -1 ? args : args.slice(0, streams);
    const block = options.findIndex((a) => String(a).toLowerCase() === 'block');
    if (block !== -1 && block + 1 < options.length) return replace(block + 1, 'ms');
  }
  return { args, blocking: false };
}
