import { describe, expect, it } from 'vitest';
import {
  generateIdempotencyKey,
  IDEMPOTENT_METHODS,
  isIdempotentMethod,
  isIdempotentRequest,
  isValidIdempotencyKey,
} from './idempotency.js';

describe('idempotency (SPEC R5, H2)', () => {
  it('knows the idempotent methods, case-sensitively', () => {
    for (const m of ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE'])
      expect(isIdempotentMethod(m)).toBe(true);
    for (const m of ['POST', 'PATCH', 'CONNECT', 'get', '']) expect(isIdempotentMethod(m)).toBe(false);
  });

  it('QUERY (the safe method with a body) is idempotent like GET; the mesh list stays RFC 9110 (#26 item 5)', () => {
    // Before: QUERY was not idempotent, so prazo/http sent it once and never retried or hedged it.
    expect(isIdempotentMethod('QUERY')).toBe(true);
    expect(isIdempotentRequest({ method: 'QUERY' })).toBe(true);
    expect(isIdempotentMethod('query')).toBe(false);
    // What the mesh exports name in route matches (Gateway API's HTTPMethod has no QUERY).
    expect([...IDEMPOTENT_METHODS]).toEqual(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);
  });

  it('treats a POST with a valid Idempotency-Key as idempotent', () => {
    expect(isIdempotentRequest({ method: 'POST' })).toBe(false);
    expect(isIdempotentRequest({ method: 'POST', headers: { 'idempotency-key': 'k-1' } })).toBe(true);
    expect(isIdempotentRequest({ method: 'POST', headers: new Headers({ 'Idempotency-Key': 'k-1' }) })).toBe(
      true,
    );
    expect(isIdempotentRequest({ method: 'POST', headers: { 'idempotency-key': '' } })).toBe(false);
    expect(isIdempotentRequest({ method: 'POST', headers: { 'idempotency-key': 'a\r\nb' } })).toBe(false);
  });

  it('validates keys and generates distinct valid ones', () => {
    expect(isValidIdempotencyKey('x'.repeat(255))).toBe(true);
    expect(isValidIdempotencyKey('x'.repeat(256))).toBe(false);
    expect(isValidIdempotencyKey('has space')).toBe(false);
    expect(isValidIdempotencyKey(42)).toBe(false);
    const keys = new Set(Array.from({ length: 100 }, generateIdempotencyKey));
    expect(keys.size).toBe(100);
    for (const k of keys) expect(isValidIdempotencyKey(k)).toBe(true);
  });
});
