import type { StackName } from '../types.js';
import type { Stack } from './types.js';

/**
 * The stack implementations, loaded on demand: a naive service process never loads cockatiel or
 * prazo's HTTP client, so each process carries only what its stack uses.
 */
export async function stackNamed(name: StackName): Promise<Stack> {
  switch (name) {
    case 'naive':
      return (await import('./naive.js')).naiveStack;
    case 'cockatiel':
      return (await import('./cockatiel.js')).cockatielStack;
    case 'prazo':
      return (await import('./prazo.js')).prazoStack;
  }
}
