import type { Clock } from '../../clock/clock.js';
import type { ProgressEvent } from '../run/progress-events.js';
import type { StackName, UserResult } from '../types.js';
import { ms, pad } from './format.js';

/**
 * The progress display of `prazo demo` (on stderr, so `--json` stays clean on stdout). On a terminal
 * the current stack's line is redrawn in place as answers come in (at most every 100 ms); elsewhere
 * (CI logs, pipes) one line is written per finished step.
 */
export interface ProgressPrinter {
  readonly onProgress: (event: ProgressEvent) => void;
  /** Ends the line being redrawn, if any. */
  finish(): void;
}

interface Tally {
  sent: number;
  ok: number;
  error: number;
  timeout: number;
  catalogOk: number;
  catalog: number;
}

const REDRAW_MS = 100;

export function createProgressPrinter(options: {
  readonly write: (text: string) => void;
  readonly tty: boolean;
  readonly clock: Clock;
}): ProgressPrinter {
  const { write, tty, clock } = options;
  let tally: Tally = fresh();
  let stack: StackName | undefined;
  let loadMs = 0;
  let loadStart = 0;
  let lastDraw = Number.NEGATIVE_INFINITY;
  let open = false;

  const line = (): string => {
    const elapsed = Math.min(loadMs, clock.now() - loadStart);
    const t = tally;
    return (
      `    ${pad(stack ?? '', 10)}${ms(elapsed)} / ${ms(loadMs)}  checkout ${t.ok} ok, ${t.error} failed, ` +
      `${t.timeout} gave up  ·  catalog ${t.catalogOk}/${t.catalog} ok`
    );
  };
  const draw = (force: boolean): void => {
    if (!tty) return;
    const now = clock.now();
    if (!force && now - lastDraw < REDRAW_MS) return;
    lastDraw = now;
    write(`\r\x1b[2K${line()}`);
    open = true;
  };
  const close = (suffix: string): void => {
    if (tty) {
      write(`\r\x1b[2K${line()}${suffix}\n`);
      open = false;
    } else {
      write(`${line()}${suffix}\n`);
    }
  };

  const text = (event: ProgressEvent): string | undefined => {
    switch (event.type) {
      case 'warming':
        return `  warming up the ${event.stack} stack (${ms(event.loadMs)} of healthy traffic)\n`;
      case 'calibrating':
        return `  calibrating: measuring each hop's healthy latency for ${ms(event.loadMs)}\n`;
      case 'calibrated': {
        const c = event.calibration;
        return (
          `  measured p99 → prazo timeout: orders ${c.orders.measuredP99Ms} → ${c.orders.responseMs} ms, ` +
          `inventory ${c.inventory.measuredP99Ms} → ${c.inventory.responseMs} ms, supplier ${c.supplier.measuredP99Ms} → ${c.supplier.responseMs} ms ` +
          `(the hops above wait for the supplier's hedge: ${c.supplier.hedgeMs} + ${c.supplier.measuredP99Ms} ms)\n`
        );
      }
      case 'scenario':
        return `\n[${event.index + 1}/${event.total}] ${event.title}: ${event.description}\n`;
      default:
        return undefined;
    }
  };

  const onProgress = (event: ProgressEvent): void => {
    const said = text(event);
    if (said !== undefined) write(said);
    else if (event.type === 'phase' && event.phase === 'load') {
      stack = event.stack;
      tally = fresh();
      loadMs = event.loadMs;
      loadStart = clock.now();
      draw(true);
    } else if (event.type === 'user') {
      count(tally, event.result);
      draw(false);
    } else if (event.type === 'drained') {
      close(event.cutOff ? `  (still working ${ms(event.waitedMs)} later: cut off)` : '');
    }
  };
  return {
    onProgress,
    finish: () => {
      if (open) write('\n');
      open = false;
    },
  };
}

function fresh(): Tally {
  return { sent: 0, ok: 0, error: 0, timeout: 0, catalogOk: 0, catalog: 0 };
}

function count(tally: Tally, result: UserResult): void {
  if (result.route === 'catalog') {
    tally.catalog += 1;
    if (result.outcome === 'ok') tally.catalogOk += 1;
    return;
  }
  tally.sent += 1;
  tally[result.outcome] += 1;
}
