import { describe, expect, it } from 'vitest';
import type { TraceChoice, Waterfall, WaterfallSpan } from '../trace/stitch.js';
import { spanLabel, waterfallChart, waterfallPanels, waterfallSummary } from './waterfall.js';

const span = (over: Partial<WaterfallSpan>): WaterfallSpan => ({
  traceId: 'a'.repeat(32),
  spanId: '1'.repeat(16),
  service: 'gateway',
  kind: 'server',
  name: 'GET /checkout',
  startMs: 0,
  endMs: 100,
  outcome: 'ok',
  depth: 0,
  ...over,
});

const trace = (spans: WaterfallSpan[], over: Partial<Waterfall> = {}): Waterfall => ({
  traceId: 'a'.repeat(32),
  startEpochMs: 0,
  durationMs: spans[0]?.endMs ?? 0,
  failed: true,
  spans,
  hops: ['gateway'],
  dropped: 0,
  ...over,
});

describe('the trace waterfall (issue #26 item 2)', () => {
  it('labels a row with service, operation, attempt n, outcome and ms', () => {
    expect(spanLabel(span({ status: 504, outcome: 'timeout', endMs: 1_903 }))).toBe(
      'gateway GET /checkout · timeout 504 · 1.9 s',
    );
    expect(
      spanLabel(
        span({
          kind: 'attempt',
          service: 'inventory',
          name: 'supplier',
          attempt: 2,
          attemptKind: 'hedge',
          outcome: 'cancelled',
          endMs: 40,
        }),
      ),
    ).toBe('inventory → supplier · attempt 2 (hedge) · cancelled · 40 ms');
    expect(
      spanLabel(
        span({
          kind: 'call',
          service: 'inventory',
          name: 'supplier',
          outcome: 'refused',
          error: 'THROTTLED',
          endMs: 0.25,
        }),
      ),
    ).toBe('inventory: call supplier · refused locally (THROTTLED) · 0.3 ms');
  });

  it('one row per span with its title, the deadline and give-up lines, the marked span, text escaped', () => {
    const spans = [
      span({ endMs: 1_950, outcome: 'timeout', status: 504 }),
      span({
        spanId: '2'.repeat(16),
        kind: 'call',
        name: 'orders<script>',
        depth: 1,
        startMs: 1,
        endMs: 1_900,
        outcome: 'timeout',
        error: 'DEADLINE_EXCEEDED',
        events: [{ name: 'pushback', atMs: 3, detail: 'a & b' }],
      }),
    ];
    const svg = waterfallChart(
      'w',
      'Trace of one checkout: prazo',
      trace(spans, {
        deadlineMs: 1_900,
        giveUpMs: 2_000,
        ranOut: { spanId: '2'.repeat(16), how: 'deadline' },
      }),
    );
    expect(svg.match(/<g class="span/g)).toHaveLength(2);
    expect(svg.match(/<title>/g)!.length).toBeGreaterThanOrEqual(4); // the chart, two rows, the event
    expect(svg).toContain('class="deadline" data-ms="1900"');
    expect(svg).toContain('class="give-up" data-ms="2000"');
    expect(svg).toContain('class="span ran-out"');
    expect(svg).not.toContain('<script>');
    expect(svg).toContain('orders&#60;script&#62;');
    expect(svg).toContain('a &#38; b');
    expect(svg).toContain('role="img"');
  });

  it('caps the rows it draws and says how many it left out', () => {
    const spans = Array.from({ length: 75 }, (_, i) =>
      span({
        spanId: (i + 1).toString(16).padStart(16, '0'),
        startMs: i,
        endMs: i + 10,
        depth: i === 0 ? 0 : 1,
      }),
    );
    const svg = waterfallChart('w', 't', trace(spans));
    expect(svg.match(/<g class="span/g)).toHaveLength(60);
    expect(svg).toContain('15 more span(s) not drawn');
  });

  it('a stack without a trace says "no trace captured"; the summary says where it ran out', () => {
    const choices: TraceChoice[] = [{ stack: 'naive', waterfall: undefined, sampled: 0, failed: 0 }];
    const html = waterfallPanels('hung', choices, ['naive', 'prazo']);
    expect(html.match(/no trace captured/g)).toHaveLength(2);
    const spans = [
      span({ endMs: 30, outcome: 'error', status: 503 }),
      span({
        spanId: '2'.repeat(16),
        kind: 'call',
        service: 'inventory',
        name: 'supplier',
        depth: 1,
        outcome: 'refused',
        error: 'THROTTLED',
        endMs: 1,
      }),
    ];
    expect(waterfallSummary(trace(spans, { ranOut: { spanId: '2'.repeat(16), how: 'failed' } }))).toContain(
      'The failure started in inventory: call supplier · refused locally (THROTTLED)',
    );
  });
});
