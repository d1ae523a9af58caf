import { createHash } from 'node:crypto';

/** JSON with object keys sorted, so that key order and white space do not matter. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * What makes two requests "the same" for an Idempotency-Key: method, path and body. A JSON
 * body is compared by meaning, anything else byte for byte.
 */
export function requestFingerprint(method: string, path: string, body: Buffer | undefined): string {
  const hash = createHash('sha256').update(`${method} ${path}\n`);
  if (body && body.length > 0) {
    let canonical: string | undefined;
    try {
      canonical = canonicalJson(JSON.parse(body.toString('utf8')));
    } catch {
      canonical = undefined;
    }
    hash.update(canonical === undefined ? body : `json:${canonical}`);
  }
  return hash.digest('hex');
}
