import { IDEMPOTENCY_KEY_HEADER } from '../retry/constants.js';
import type { MeshPolicy } from './policy.js';

/**
 * What the Kubernetes renderers (Gateway API, Istio, Linkerd) share: object metadata that says who
 * wrote the object and from which dependency, and the request matches that split a dependency's calls
 * into the ones prazo may retry (idempotent methods, or a request carrying an `idempotency-key`,
 * SPEC R5) and the rest, which a proxy must send once. A proxy knows nothing of idempotency, so
 * without that split it would retry a POST.
 */

/** A Kubernetes object, as plain data (validated against its published model by the tests). */
export type KubernetesObject = Readonly<Record<string, unknown>> & {
  readonly apiVersion: string;
  readonly kind: string;
};

export const MANAGED_BY = Object.freeze({ 'app.kubernetes.io/managed-by': 'prazo' });

/**
 * `metadata` of an object generated for `policy`, or for the dependencies of one Service merged into
 * one object: `<service>-<suffix>` in the Service's namespace, `prazo/dependency` naming them all
 * (comma-separated, in the file's order).
 */
export function metadataFor(
  policy: MeshPolicy | readonly MeshPolicy[],
  suffix: string,
  annotations: Readonly<Record<string, string>> = {},
): Record<string, unknown> {
  const all: readonly MeshPolicy[] = Array.isArray(policy) ? policy : [policy as MeshPolicy];
  const { placement } = all[0]!;
  return {
    name: objectName(placement.service, suffix),
    namespace: placement.namespace,
    labels: { ...MANAGED_BY },
    annotations: { 'prazo/dependency': all.map((p) => p.dependency).join(', '), ...annotations },
  };
}

/** `<service>-<suffix>`, within the 253 characters of a DNS subdomain (a Service name is at most 63). */
const objectName = (service: string, suffix: string): string => `${service}-${suffix}`;

/** True when the policy retries at all (more than one attempt fits the deadline). */
export const retries = (policy: MeshPolicy): boolean => policy.retries > 0;

/** Gateway API `HTTPRouteMatch`es of the retryable requests: one per idempotent method, one for a key. */
export function retryableHttpMatches(policy: MeshPolicy): Record<string, unknown>[] {
  const path = { type: 'PathPrefix', value: policy.placement.path };
  return [
    ...policy.idempotentMethods.map((method) => ({ path, method })),
    {
      path,
      headers: [{ type: 'RegularExpression', name: IDEMPOTENCY_KEY_HEADER, value: '.+' }],
    },
  ];
}
