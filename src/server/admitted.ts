import type { IncomingDeadline } from '../deadline/headers.js';

/**
 * The server side's tracing seam (issue #26): prazo/otel records each request's incoming deadline
 * (its header, the time left, capped or not) on the active server span. A hook per event hub, kept
 * out of the hub's public shape; `admitRequest` asks for it only when one was ever installed, so a
 * server nobody traces pays one module-variable read per request.
 */
export type AdmittedHook = (incoming: IncomingDeadline, remainingMs: number) => void;

const hooks = new WeakMap<object, AdmittedHook>();
let installed = false;

/** Calls `hook` for each request admitted (or refused as expired) by servers publishing to `hub`. */
export function setAdmittedHook(hub: object, hook: AdmittedHook | undefined): void {
  if (hook === undefined) hooks.delete(hub);
  else {
    hooks.set(hub, hook);
    installed = true;
  }
}

/** The hook of `hub`, if any (undefined at once when none was ever installed). */
export function admittedHookOf(hub: object): AdmittedHook | undefined {
  return installed ? hooks.get(hub) : undefined;
}
