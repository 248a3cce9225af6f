#!/usr/bin/env node
/**
 * Entry point of every demo service process (forked by the demo's parent, never run by hand): waits
 * for its configuration on the IPC channel, starts the supplier double or one of the middle services
 * with the stack it is told, and reports its measurements when asked.
 */
import { systemClock } from '../../clock/system.js';
import { serveChild } from '../process/child.js';
import { stackNamed } from '../stacks/index.js';
import { startRole } from './roles.js';
import { startSupplier } from './supplier.js';

serveChild(async (config) => {
  if (config.role === 'supplier') return startSupplier(config, systemClock);
  return startRole(config, await stackNamed(config.stack), systemClock);
});
