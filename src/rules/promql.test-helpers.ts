import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { afterAll } from 'vitest';

/**
 * PromQL checks with the Prometheus project's own grammar (`@prometheus-io/lezer-promql`, the parser
 * behind Prometheus' web UI): the positions of error nodes, and the metric names an expression reads.
 */

export interface ParsedQuery {
  /** Source excerpts where the grammar found an error (empty when the query parses cleanly). */
  readonly errors: readonly string[];
  /** Metric names of every vector selector (`foo{...}` and `foo{...}[5m]`). */
  readonly metrics: readonly string[];
}

export function parsePromQL(expr: string): ParsedQuery {
  const tree = parser.parse(expr);
  const errors: string[] = [];
  const metrics: string[] = [];
  tree.iterate({
    enter(node) {
      if (node.type.isError)
        errors.push(`${node.from}: ${JSON.stringify(expr.slice(Math.max(0, node.from - 20), node.to + 20))}`);
      if (node.name === 'VectorSelector') {
        const id = node.node.getChild('Identifier');
        if (id) metrics.push(expr.slice(id.from, id.to));
      }
    },
  });
  return { errors, metrics };
}

/** What Grafana does before sending a panel query: its variables replaced by values. */
export function substituteGrafana(expr: string): string {
  return expr.replaceAll('$__rate_interval', '1m').replaceAll('$dependency', '.*');
}

/** Prometheus' own `promtool` is installed (Debian's `prometheus`): the tests that run it skip without. */
export const hasPromtool: boolean = (() => {
  try {
    execFileSync('promtool', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** A fresh temporary directory for promtool's files, removed after the calling test file's tests. */
export function promtoolDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
