import { byService } from './group.js';
import type { MeshPolicy, MeshProblem } from './policy.js';

/**
 * What a target's cluster or proxy would refuse, or would apply as something else, found before a
 * file is written (#24 items 9, 10): an export that `kubectl apply` half-rejects, or whose objects
 * overwrite each other, is policy silently lost, so it is refused with the reason at the config key.
 */

/**
 * The path as the target matches it. A Gateway API `PathPrefix` (Gateway API, and Linkerd, which
 * reads HTTPRoutes) matches path elements and ignores a trailing `/`: `/read/` and `/read` are one
 * match, and of two rules with one match the first wins, so the second dependency's policy would
 * never apply. Istio's and Envoy's `prefix` is a plain string prefix: `/read/` and `/read` differ
 * (the longer goes first).
 */
function matchedPath(path: string, target: RoutedTarget): string {
  if (target !== 'gateway-api' && target !== 'linkerd') return path;
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

/** The targets whose resources are keyed by the Service and routed by path. */
export type RoutedTarget = 'gateway-api' | 'istio' | 'linkerd' | 'envoy';

/**
 * The HTTPRoute CRD's validation of a path match's `value` (type `PathPrefix`), as the API server
 * applies it: `maxLength: 1024` and the CEL rules on `HTTPPathMatch` (kubernetes-sigs/gateway-api,
 * `config/crd/*\/gateway.networking.k8s.io_httproutes.yaml`), messages as the server words them. The
 * config only asks for a `/` first and no whitespace, `?` or `#`; a path such as `/a|b` or `/é` loads,
 * and an HTTPRoute carrying it is refused by the cluster.
 */
const PATH_RULES: ReadonlyArray<readonly [(path: string) => boolean, string]> = [
  [(p) => p.length <= 1024, 'may not be more than 1024 characters'],
  [(p) => p.startsWith('/'), "must be an absolute path and start with '/'"],
  [(p) => !p.includes('//'), "must not contain '//'"],
  [(p) => !p.includes('/./'), "must not contain '/./'"],
  [(p) => !p.includes('/../'), "must not contain '/../'"],
  [(p) => !p.includes('%2f') && !p.includes('%2F'), "must not contain '%2f' or '%2F' (an encoded '/')"],
  [(p) => !p.includes('#'), "must not contain '#'"],
  [(p) => !p.endsWith('/..') && !p.endsWith('/.'), "must not end with '/..' or '/.'"],
  [
    // CEL's matches() is RE2; this pattern reads the same in JavaScript.
    (p) => /^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$/.test(p),
    "must only contain A-Z a-z 0-9 - . _ ~ ! $ & ' ( ) * + , ; = : @ / and %XX escapes",
  ],
];

/** The first HTTPRoute path rule `path` breaks, in words, or undefined when the CRD accepts it. */
export function httpRoutePathProblem(path: string): string | undefined {
  return PATH_RULES.find(([ok]) => !ok(path))?.[1];
}

/** Whether `target` writes a route for this policy, and whether that route matches on its path. */
function routing(policy: MeshPolicy, target: RoutedTarget): 'path' | 'pathless' | 'none' {
  const grpc = policy.placement.protocol === 'grpc';
  if (target === 'gateway-api') return grpc ? 'none' : 'path'; // GRPCRoute: nothing to time or retry
  if (target === 'linkerd') return grpc ? 'pathless' : 'path'; // a GRPCRoute, matching every method
  return 'path'; // Istio and Envoy route gRPC by its path prefix too
}

/**
 * The problems `target` would have with these policies (those selected for export). `gateway`: the
 * Gateway the HTTPRoutes attach to (`mesh.gateway`; without a namespace, the route's own), when they
 * do not attach to their Services.
 */
export function targetProblems(
  policies: readonly MeshPolicy[],
  target: RoutedTarget,
  gateway?: { readonly name: string; readonly namespace?: string },
): MeshProblem[] {
  const problems: MeshProblem[] = [];
  const at = (p: MeshPolicy, ...key: string[]) => ['dependencies', p.index, ...key];
  if (target === 'gateway-api' || target === 'linkerd') {
    for (const p of policies) {
      if (routing(p, target) !== 'path') continue;
      const broken = httpRoutePathProblem(p.placement.path);
      if (broken !== undefined) {
        problems.push({
          dependency: p.dependency,
          path: at(p, 'mesh', 'path'),
          message: `\`${p.placement.path}\` is not a path an HTTPRoute accepts: it ${broken} (the Gateway API CRD's validation)`,
        });
      }
    }
  }
  for (const group of byService(policies)) {
    const routed = group.filter((p) => routing(p, target) !== 'none');
    const first = routed[0];
    if (first === undefined) continue;
    const service = `Service \`${first.placement.service}\``;
    for (const [i, p] of routed.entries()) {
      const earlier = routed.slice(0, i);
      const port = earlier.find((q) => q.placement.port !== p.placement.port);
      const same = earlier.find(
        (q) =>
          routing(q, target) === 'path' &&
          routing(p, target) === 'path' &&
          matchedPath(q.placement.path, target) === matchedPath(p.placement.path, target),
      );
      const pathless = earlier.find(
        (q) => routing(q, target) === 'pathless' && routing(p, target) === 'pathless',
      );
      // Linkerd serves a Service either its GRPCRoutes or its HTTPRoutes, the older kind's (GEP-1016's
      // cross-serving, linkerd2#12761): the other dependency's routes would be dropped without a word.
      const mixed = earlier.find((q) => target === 'linkerd' && routing(q, target) !== routing(p, target));
      if (port !== undefined) {
        problems.push({
          dependency: p.dependency,
          path: at(p, 'mesh', 'port'),
          message: `routes ${service} on port ${p.placement.port}, and \`${port.dependency}\` on port ${port.placement.port}: the ${target} resources of one Service cannot keep two ports apart; export them separately (--dependency)`,
        });
      } else if (same !== undefined) {
        problems.push({
          dependency: p.dependency,
          path: at(p, 'mesh'),
          message: `\`${same.dependency}\` and \`${p.dependency}\` both route ${service} path \`${p.placement.path}\`${same.placement.path === p.placement.path ? '' : ` (as \`${same.placement.path}\`: a PathPrefix ignores a trailing \`/\`)`}: a proxy cannot tell their calls apart; give each its own \`mesh.path\`, or \`mesh: false\` to one`,
        });
      } else if (pathless !== undefined) {
        problems.push({
          dependency: p.dependency,
          path: at(p, 'mesh'),
          message: `\`${pathless.dependency}\` and \`${p.dependency}\` are both gRPC on ${service}: Linkerd's GRPCRoute annotations hold for every method of the Service, so only one policy can apply; export them separately (--dependency), or \`mesh: false\` to one`,
        });
      } else if (mixed !== undefined) {
        problems.push({
          dependency: p.dependency,
          path: at(p, 'mesh', 'protocol'),
          message: `\`${mixed.dependency}\` is ${mixed.placement.protocol} and \`${p.dependency}\` ${p.placement.protocol} on ${service}: Linkerd applies only one kind of route to a Service (its GRPCRoutes or its HTTPRoutes, whichever is older), so one policy would be dropped; \`mesh: false\` to one`,
        });
      }
    }
  }
  if (target === 'gateway-api' && gateway !== undefined)
    problems.push(...sharedGatewayProblems(policies, gateway));
  return problems;
}

/**
 * HTTPRoutes attached to one Gateway (`mesh.gateway`) carry no hostnames, so each matches every host
 * the Gateway serves: two Services' routes with one path match the same calls, and the Gateway sends
 * them all to the older route's Service (GEP-1742's tie-break across routes). The other dependency's
 * calls would reach the wrong backend, silently. Within one Service the check above already holds.
 */
function sharedGatewayProblems(
  policies: readonly MeshPolicy[],
  gateway: { readonly name: string; readonly namespace?: string },
): MeshProblem[] {
  const routed = policies.filter((p) => routing(p, 'gateway-api') === 'path');
  const parent = (p: MeshPolicy): string => `${gateway.namespace ?? p.placement.namespace}/${gateway.name}`;
  const problems: MeshProblem[] = [];
  for (const [i, p] of routed.entries()) {
    const path = matchedPath(p.placement.path, 'gateway-api');
    const other = routed
      .slice(0, i)
      .find(
        (q) =>
          `${q.placement.namespace}/${q.placement.service}` !==
            `${p.placement.namespace}/${p.placement.service}` &&
          parent(q) === parent(p) &&
          matchedPath(q.placement.path, 'gateway-api') === path,
      );
    if (other !== undefined) {
      problems.push({
        dependency: p.dependency,
        path: ['dependencies', p.index, 'mesh'],
        message: `\`${other.dependency}\` (Service \`${other.placement.service}\`) and \`${p.dependency}\` (Service \`${p.placement.service}\`) both route path \`${p.placement.path}\` through Gateway \`${parent(p)}\`: a route attached to a Gateway matches every host it serves, so the Gateway would send both dependencies' calls to one Service; give each its own \`mesh.path\``,
      });
    }
  }
  return problems;
}
