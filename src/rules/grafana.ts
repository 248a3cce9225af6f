/**
 * The part of Grafana's dashboard JSON model (schemaVersion 39) the generator writes, typed precisely
 * so a test can assign a generated dashboard to `@grafana/schema`'s own `Dashboard` type: the compiler
 * then checks the shape against Grafana's published schema, not only against our reading of it.
 * Type aliases, not interfaces: Grafana types queries as `Record<string, unknown>`, which only an
 * alias (implicitly indexable) is assignable to.
 */

export type DataSourceRef = {
  type: string;
  uid: string;
};

export type GridPos = {
  h: number;
  w: number;
  x: number;
  y: number;
};

export type PrometheusTarget = {
  refId: string;
  datasource: DataSourceRef;
  expr: string;
  legendFormat: string;
  range: boolean;
};

export type TimeseriesPanel = {
  id: number;
  type: 'timeseries';
  title: string;
  description: string;
  datasource: DataSourceRef;
  gridPos: GridPos;
  fieldConfig: {
    defaults: { unit: string; custom: { drawStyle: string; lineWidth: number; fillOpacity: number } };
    overrides: never[];
  };
  options: {
    legend: { displayMode: 'list'; placement: 'bottom'; showLegend: boolean };
    tooltip: { mode: 'multi'; sort: 'desc' };
  };
  targets: PrometheusTarget[];
};

export type RowPanel = {
  id: number;
  type: 'row';
  title: string;
  collapsed: boolean;
  gridPos: GridPos;
  panels: never[];
};

export type DashboardVariable = {
  name: string;
  label: string;
  type: 'datasource' | 'query';
  query: string | { query: string; refId: string };
  datasource?: DataSourceRef;
  definition?: string;
  includeAll?: boolean;
  multi?: boolean;
  allValue?: string;
  /** What is selected when the dashboard opens; absent = Grafana picks (the default data source). */
  current?: { selected: boolean; text: string[]; value: string[] };
  hide: 0;
  options: never[];
  refresh: 1 | 2;
  regex: string;
  sort?: 1;
};

export type GrafanaDashboard = {
  uid: string;
  title: string;
  description: string;
  tags: string[];
  editable: boolean;
  graphTooltip: 0 | 1 | 2;
  schemaVersion: number;
  version: number;
  refresh: string;
  time: { from: string; to: string };
  timepicker: Record<string, never>;
  timezone: string;
  fiscalYearStartMonth: number;
  links: never[];
  annotations: { list: never[] };
  templating: { list: DashboardVariable[] };
  panels: (RowPanel | TimeseriesPanel)[];
};
