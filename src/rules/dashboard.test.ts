import type { Dashboard } from '@grafana/schema';
import { describe, expect, it } from 'vitest';
import { generateDashboard } from './dashboard.js';
import { dashboardProblems, dashboardQueries } from './dashboard.test-helpers.js';
import type { RulesInput } from './input.js';
import { exportedSeriesNames, type NamingScheme } from './names.js';
import { parsePromQL, substituteGrafana } from './promql.test-helpers.js';

const config: RulesInput = {
  dependencies: [{ name: 'supplier', maxRatio: 0.2, hedging: true }, { name: 'inventory' }],
  endpoints: [{ name: 'POST /orders', components: ['gateway', 'database'] }],
};

describe('generateDashboard (SPEC V3, X3)', () => {
  it('has the shape Grafana imports as is', () => {
    const dashboard = generateDashboard(config);
    expect(dashboardProblems(dashboard)).toEqual([]);
    expect(dashboardProblems(generateDashboard({ dependencies: [] }))).toEqual([]);
  });

  it('is a Dashboard as Grafana’s own published schema types it (@grafana/schema, checked by tsc)', () => {
    // A compile-time check: this file does not typecheck if the generator drifts from Grafana's model.
    const typed: Dashboard = generateDashboard(config);
    expect(typed.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(typed.panels?.every((p) => p.gridPos !== undefined)).toBe(true);
  });

  it('the shape check catches what would break an import', () => {
    const good = generateDashboard(config);
    const panels: Record<string, unknown>[] = good.panels.map((p) => ({ ...p }));
    panels[1] = { ...panels[1], gridPos: { x: 20, y: 1, w: 12, h: 8 } };
    panels[2] = { ...panels[2], id: panels[3]?.id, targets: [{ refId: 'A', expr: 'x{a=~"$nope"}' }] };
    const problems = dashboardProblems({ ...good, panels, templating: { list: [] } });
    for (const part of [
      'wider than',
      'overlaps',
      'unique integer',
      'undefined variable $nope',
      'datasource',
    ]) {
      expect(problems.join('\n')).toContain(part);
    }
  });

  it.each(['exporter', 'otlp'] as NamingScheme[])(
    '%s naming: every panel query parses and reads only exported series',
    (naming) => {
      const dashboard = generateDashboard(config, { naming });
      const exported = new Set(exportedSeriesNames(naming));
      const queries = dashboardQueries(dashboard);
      expect(queries.length).toBeGreaterThan(10);
      for (const query of queries) {
        const parsed = parsePromQL(substituteGrafana(query));
        expect(parsed.errors, query).toEqual([]);
        for (const metric of parsed.metrics) expect(exported.has(metric), `${metric} in ${query}`).toBe(true);
      }
      const variable = dashboard.templating.list.find((v) => v.name === 'dependency') as {
        definition: string;
      };
      const [, metric] = /^label_values\((\w+), prazo_dependency\)$/.exec(variable.definition) ?? [];
      expect(exported.has(metric ?? '')).toBe(true);
    },
  );

  it('shows the panels the seed asks for, and each budget ratio from the config', () => {
    const dashboard = generateDashboard(config);
    const titles = dashboard.panels.map((p) => String(p.title)).join('\n');
    for (const title of [
      'Retry ratio',
      'Configured timeout vs live p99',
      'Timeouts by phase',
      'Hedges',
      'Wasted work',
      'Slice overrun',
      'Throttle refusal share',
      'Calls sent and refused',
    ]) {
      expect(titles).toContain(title);
    }
    const queries = dashboardQueries(dashboard).join('\n');
    expect(queries).toContain('label_replace(vector(0.2), "prazo_dependency", "supplier", "", "")');
    expect(queries).toContain('label_replace(vector(0.1), "prazo_dependency", "inventory", "", "")');
    expect(queries).toContain('prazo_endpoint=~"POST /orders"');
  });

  it('the throttle row: present while any dependency throttles, beside the calls sent (#23)', () => {
    const titles = (input: RulesInput) => generateDashboard(input).panels.map((p) => String(p.title));
    expect(titles(config)).toContain('Adaptive throttling (docs/throttling.md)');
    const off = titles({ dependencies: [{ name: 'a', throttle: false }] });
    expect(off.some((t) => t.includes('Throttle') || t.includes('throttl'))).toBe(false);
    const dashboard = generateDashboard(config);
    expect(dashboardProblems(dashboard)).toEqual([]);
    const queries = dashboardQueries(dashboard).join('\n');
    expect(queries).toContain('max by (prazo_dependency) (prazo_dependency_throttle_probability{');
  });
});
