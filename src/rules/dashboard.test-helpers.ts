/**
 * The shape a Grafana dashboard must have to import as is (dashboard JSON model, schemaVersion ≥ 36):
 * what Grafana's importer needs and what its panels read. Returns every problem found, [] when valid.
 */

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInt = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0;

interface Box {
  readonly x: number;
  readonly y: number;
  readonly w: number;
  readonly h: number;
}
const overlaps = (a: Box, b: Box): boolean =>
  a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

function checkPanel(p: Json, at: string, variables: Set<string>, problems: string[]): void {
  if (p.type === 'row') return;
  if (p.type !== 'timeseries') problems.push(`${at}: unexpected panel type ${String(p.type)}`);
  if (typeof p.title !== 'string' || p.title === '') problems.push(`${at}: no title`);
  const ds = p.datasource as Json | undefined;
  // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, literally.
  if (!isObject(ds) || ds.type !== 'prometheus' || ds.uid !== '${datasource}')
    problems.push(`${at}: datasource must be the $datasource variable`);
  const unit = (p.fieldConfig as Json | undefined)?.defaults as Json | undefined;
  if (typeof unit?.unit !== 'string') problems.push(`${at}: no unit`);
  const targets = p.targets;
  if (!Array.isArray(targets) || targets.length === 0) {
    problems.push(`${at}: no targets`);
    return;
  }
  const refIds = new Set<string>();
  targets.forEach((t: Json, j) => {
    if (typeof t.refId !== 'string' || refIds.has(t.refId))
      problems.push(`${at}.targets[${j}]: missing or duplicate refId`);
    refIds.add(String(t.refId));
    if (typeof t.expr !== 'string' || t.expr === '') problems.push(`${at}.targets[${j}]: no expr`);
    for (const [, name] of String(t.expr).matchAll(/\$(\w+)/g)) {
      if (!name?.startsWith('__') && !variables.has(name ?? ''))
        problems.push(`${at}.targets[${j}]: undefined variable $${name}`);
    }
  });
}

export function dashboardProblems(dashboard: unknown, columns = 24): string[] {
  const problems: string[] = [];
  if (!isObject(dashboard)) return ['not an object'];
  const d = dashboard;
  for (const key of ['uid', 'title', 'refresh'])
    if (typeof d[key] !== 'string' || d[key] === '') problems.push(`${key} must be a non-empty string`);
  if (typeof d.schemaVersion !== 'number' || d.schemaVersion < 36)
    problems.push('schemaVersion must be a number >= 36');
  if (!isObject(d.time) || typeof d.time.from !== 'string' || typeof d.time.to !== 'string')
    problems.push('time.from/to');
  const list = isObject(d.templating) ? d.templating.list : undefined;
  if (!Array.isArray(list)) problems.push('templating.list must be an array');
  const variables = new Set((Array.isArray(list) ? list : []).map((v: Json) => String(v.name)));
  if (!variables.has('datasource'))
    problems.push('a `datasource` variable is needed to import without inputs');
  if (!Array.isArray(d.panels) || d.panels.length === 0)
    return [...problems, 'panels must be a non-empty array'];
  const ids = new Set<number>();
  const boxes: Box[] = [];
  d.panels.forEach((p: unknown, i) => {
    const at = `panels[${i}]`;
    if (!isObject(p)) {
      problems.push(`${at}: not an object`);
      return;
    }
    if (!isInt(p.id) || ids.has(p.id)) problems.push(`${at}: id must be a unique integer`);
    ids.add(p.id as number);
    const g = p.gridPos as Json | undefined;
    if (!isObject(g) || ![g.x, g.y, g.w, g.h].every(isInt) || (g.w as number) < 1 || (g.h as number) < 1) {
      problems.push(`${at}: gridPos must hold integers x, y, w >= 1, h >= 1`);
    } else {
      const box = g as unknown as Box;
      if (box.x + box.w > columns) problems.push(`${at}: wider than the ${columns}-column grid`);
      if (boxes.some((b) => overlaps(b, box))) problems.push(`${at}: overlaps another panel`);
      boxes.push(box);
    }
    checkPanel(p, at, variables, problems);
  });
  if (JSON.stringify(JSON.parse(JSON.stringify(d))) !== JSON.stringify(d)) problems.push('not plain JSON');
  return problems;
}

/** Every panel query of a dashboard (and each query variable's metric), for PromQL checks. */
export function dashboardQueries(dashboard: { panels: readonly object[] }): string[] {
  return dashboard.panels.flatMap((p) =>
    (((p as Json).targets as Json[] | undefined) ?? []).map((t) => String(t.expr)),
  );
}
