import type { MeshPolicy } from './policy.js';

/**
 * Dependencies that share a Kubernetes Service (#24 item 9). Two dependencies may well be one
 * Service seen twice — `/read` retried, `/write` sent once — and every system keys its resources by
 * the Service (an HTTPRoute named `<service>-prazo`, a VirtualService for the host, an Envoy virtual
 * host for its domains). One resource per dependency would give two objects of one name, and
 * `kubectl apply` keeps the last: silent policy loss. So the renderers work on groups: one resource
 * per Service, holding each dependency's rules (Linkerd, whose policy is the route's annotations,
 * keeps one route per dependency, under names told apart by {@link groupLabels}).
 */

/** The policies by Service (`namespace/service`), each group and its members in the file's order. */
export function byService(policies: readonly MeshPolicy[]): MeshPolicy[][] {
  const groups = new Map<string, MeshPolicy[]>();
  for (const policy of policies) {
    const key = `${policy.placement.namespace}/${policy.placement.service}`;
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [policy]);
    else group.push(policy);
  }
  return [...groups.values()];
}

/** Suffixes the renderers put after a label (`<label>-retryable`, `<label>-once`). */
const SUFFIXES = ['retryable', 'once'] as const;

/**
 * A label per dependency of a group, for the names of its rules or routes when the group has more
 * than one (undefined for a dependency alone: its names stay what they were). The dependency's name
 * as a DNS label part (lowercase, runs of anything else as one `-`, at most 40 characters), unless two
 * would give one name — `a` and `A`, or `a`'s `a-retryable` and a dependency named `a-retryable` —
 * then `d<index in the file>` for the whole group (or when `indexed`: see {@link routeNamesClash}).
 */
export function groupLabels(
  group: readonly MeshPolicy[],
  indexed = false,
): Map<MeshPolicy, string | undefined> {
  if (group.length === 1) return new Map([[group[0]!, undefined]]);
  const slug = (name: string): string =>
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .slice(0, 40)
      .replace(/^-+|-+$/g, '');
  const wanted = group.map((p) => slug(p.dependency));
  const names = wanted.flatMap((l) => [l, ...SUFFIXES.map((s) => `${l}-${s}`)]);
  const clash = indexed || wanted.some((l) => l === '') || new Set(names).size !== names.length;
  return new Map(group.map((p, i) => [p, clash ? `d${p.index}` : wanted[i]!]));
}

/**
 * Whether two objects of these, of one kind, would share a name in one namespace. Names built from a
 * Service and a label can meet across Services: Service `a`'s dependency `x-prazo` gives the route
 * `a-prazo-x-prazo`, and so does Service `a-prazo-x`'s only dependency; `kubectl apply` keeps the
 * last. Indexed labels cannot meet: `<service>-prazo-d<n>[-retryable]` splits one way only, and the
 * routes of a dependency alone end in `-prazo` or `-prazo-retryable`.
 */
export function routeNamesClash(objects: readonly Readonly<Record<string, unknown>>[]): boolean {
  const keys = objects.map((o) => {
    const { name, namespace } = o.metadata as { name: string; namespace: string };
    return `${o.kind as string}/${namespace}/${name}`;
  });
  return new Set(keys).size !== keys.length;
}

/** `base` for a dependency alone, `<base>-<label>` (then `-<suffix>`) for one of several. */
export function labelled(base: string, label: string | undefined, suffix?: string): string {
  return [base, label, suffix].filter((part) => part !== undefined).join('-');
}

/**
 * Envoy's virtual hosts, one per host: Envoy refuses a RouteConfiguration in which a domain is given
 * twice, and a virtual host's domains are its Service's. The routes of the dependencies of one
 * Service go in one virtual host (named after them all, `a+b`), longest prefix first: Envoy takes the
 * first route that matches, and a `prefix` is a plain string prefix.
 *
 * Names are unique too (Envoy takes a virtual host name once per route table). A joined name can
 * meet a dependency's own (`a`, `b` merged, and a dependency named `a+b`) or another joined one
 * (`a+b` with `c`, and `a` with `b+c`): a dependency alone keeps its name, and a joined name already
 * taken becomes `<name>#2`, `#3`... (the first free one, in the file's order).
 */
export function mergeVirtualHosts(hosts: readonly Record<string, unknown>[]): Record<string, unknown>[] {
  type Host = { name: string; domains: string[]; routes: Array<{ match: { prefix: string } }> };
  const merged = new Map<string, Host>();
  const joined = new Set<Host>();
  for (const raw of hosts) {
    const host = raw as unknown as Host;
    const key = host.domains[0]!;
    const seen = merged.get(key);
    if (seen === undefined) merged.set(key, { ...host, routes: [...host.routes] });
    else {
      const next = { ...seen, name: `${seen.name}+${host.name}`, routes: [...seen.routes, ...host.routes] };
      joined.delete(seen);
      joined.add(next);
      merged.set(key, next);
    }
  }
  const taken = new Set([...merged.values()].filter((h) => !joined.has(h)).map((h) => h.name));
  return [...merged.values()].map((h) => {
    let name = h.name;
    if (joined.has(h)) {
      for (let n = 2; taken.has(name); n += 1) name = `${h.name}#${n}`;
      taken.add(name);
    }
    return {
      ...h,
      name,
      routes: [...h.routes].sort((a, b) => b.match.prefix.length - a.match.prefix.length),
    };
  });
}
