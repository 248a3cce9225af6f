import type { Deadline } from '../deadline/deadline.js';
import type { RequestDeadline } from './request.js';

/**
 * What every integration adds to the request object: `req.deadline` and `req.prazoSignal`
 * (Fastify: `request.deadline`, `request.prazoSignal`, also set on `request.raw`).
 * `prazoSignal`, not `signal`: frameworks and user code already use `signal` for other things.
 */
export interface DeadlineFields {
  /** The request's deadline, capped by the local maximum (SPEC D2). */
  deadline: Deadline;
  /** Aborts at the deadline or when the client disconnects (SPEC D7): pass it downstream. */
  prazoSignal: AbortSignal;
}

/** Sets the fields on `target` and returns it, typed. */
export function attachFields<T extends object>(target: T, admitted: RequestDeadline): T & DeadlineFields {
  const fields = target as T & DeadlineFields;
  fields.deadline = admitted.deadline;
  fields.prazoSignal = admitted.signal;
  return fields;
}
