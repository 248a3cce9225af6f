import type { Attributes } from '@opentelemetry/api';
import {
  ATTEMPT_KINDS,
  ATTR,
  EJECTION_REASONS,
  INSTANCE_STATES,
  OUTCOMES,
  TIMEOUT_PHASES,
} from './constants.js';

/**
 * Attribute sets of one dependency, built once and reused for every data point: recording then
 * allocates nothing, and the SDK's attribute hashing sees the same frozen objects each time.
 */
export interface DependencyAttributes {
  readonly base: Attributes;
  readonly byKind: Readonly<Record<(typeof ATTEMPT_KINDS)[number], Attributes>>;
  readonly byPhase: Readonly<Record<(typeof TIMEOUT_PHASES)[number], Attributes>>;
  readonly byOutcome: Readonly<Record<(typeof OUTCOMES)[number], Attributes>>;
  readonly byInstanceState: Readonly<Record<(typeof INSTANCE_STATES)[number], Attributes>>;
}

/**
 * A table of attribute sets by value, looked up with whatever an event says (`kind`, `outcome`,
 * `phase`, `reason`): without a prototype, so a value such as `constructor` or `__proto__` from a
 * user's event source finds nothing and falls back to the base set, instead of recording under
 * `Object.prototype` (a series with no `prazo.dependency` at all) or a function.
 */
const table = <K extends string>(
  keys: readonly K[],
  base: Attributes,
  attribute: string,
): Readonly<Record<K, Attributes>> => {
  const out = Object.create(null) as Record<K, Attributes>;
  for (const key of keys) out[key] = Object.freeze({ ...base, [attribute]: key });
  return Object.freeze(out);
};

export function dependencyAttributes(name: string): DependencyAttributes {
  const base = Object.freeze({ [ATTR.dependency]: name });
  return Object.freeze({
    base,
    byKind: table(ATTEMPT_KINDS, base, ATTR.attemptKind),
    byPhase: table(TIMEOUT_PHASES, base, ATTR.timeoutPhase),
    byOutcome: table(OUTCOMES, base, ATTR.outcome),
    byInstanceState: table(INSTANCE_STATES, base, ATTR.instanceState),
  });
}

/**
 * A bounded cache of attribute sets by dependency name, for event sources that report several names.
 * Past `limit` names, sets are built per call (still correct, no longer free): a source inventing names
 * cannot grow memory without bound.
 */
export class AttributeCache {
  readonly #sets = new Map<string, DependencyAttributes>();
  readonly #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
  }

  get(name: string): DependencyAttributes {
    const hit = this.#sets.get(name);
    if (hit) return hit;
    const built = dependencyAttributes(name);
    if (this.#sets.size < this.#limit) this.#sets.set(name, built);
    return built;
  }
}

/** Attribute sets of one instance of a dependency (SPEC X5): its own, and by ejection reason. */
export interface InstanceAttributes {
  readonly base: Attributes;
  readonly byReason: Readonly<Record<(typeof EJECTION_REASONS)[number], Attributes>>;
}

/**
 * A bounded cache of instance attribute sets, by instance (per dependency). Past `limit` instances
 * (DNS discovery churning addresses), sets are built per call: memory stays bounded.
 */
export class InstanceAttributeCache {
  readonly #sets = new Map<string, InstanceAttributes>();
  readonly #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
  }

  get(dependency: string, instance: string): InstanceAttributes {
    // Length-prefixed: with a plain separator, names holding it (`a\0b` + `c`, `a` + `b\0c`) shared a key
    // and one instance's series carried the other's labels.
    const key = `${dependency.length}:${dependency}\u0000${instance}`;
    const hit = this.#sets.get(key);
    if (hit) return hit;
    const base = Object.freeze({ [ATTR.dependency]: dependency, [ATTR.instance]: instance });
    const built = Object.freeze({ base, byReason: table(EJECTION_REASONS, base, ATTR.ejectionReason) });
    if (this.#sets.size < this.#limit) this.#sets.set(key, built);
    return built;
  }
}
