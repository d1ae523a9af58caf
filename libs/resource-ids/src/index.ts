import { randomBytes } from 'node:crypto';

/** Kinds of resource id; the prefix tells a reader what an id names (docs/design.md#wire-conventions). */
export type ResourceKind = 'env' | 'dep' | 'run' | 'att' | 'ten' | 'tok' | 'req' | 'err' | 'sec' | 'bnd' | 'aud' | 'mat' | 'pcr' | 'evt' | 'whk' | 'whd';

// Crockford base32: sortable as plain strings, no ambiguous letters.
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const TIME_LENGTH = 10;
const RANDOM_LENGTH = 16;

function encodeTime(ms: number): string {
  let out = '';
  let rest = ms;
  for (let i = 0; i < TIME_LENGTH; i += 1) {
    out = ALPHABET[rest % 32] + out;
    rest = Math.floor(rest / 32);
  }
  return out;
}

function encodeRandom(): string {
  const bytes = randomBytes(RANDOM_LENGTH);
  let out = '';
  for (const byte of bytes) out += ALPHABET[byte % 32];
  return out;
}

let lastTime = -1;
let lastRandom = '';

/**
 * A new id such as `env_01jd6s3r8q...`: prefix, 10 characters of millisecond time and
 * 16 random ones. Ids made later sort after earlier ones, also within one millisecond.
 */
export function newId(kind: ResourceKind, now: number = Date.now()): string {
  if (now <= lastTime) {
    lastRandom = incrementBase32(lastRandom);
    return `${kind}_${encodeTime(lastTime)}${lastRandom}`;
  }
  lastTime = now;
  lastRandom = encodeRandom();
  return `${kind}_${encodeTime(now)}${lastRandom}`;
}

function incrementBase32(value: string): string {
  const chars = value.split('');
  for (let i = chars.length - 1; i >= 0; i -= 1) {
    const index = ALPHABET.indexOf(chars[i]!);
    if (index < 31) {
      chars[i] = ALPHABET[index + 1]!;
      return chars.join('');
    }
    chars[i] = ALPHABET[0]!;
  }
  return chars.join('');
}

export function idTimestamp(id: string): number {
  const encoded = id.slice(id.indexOf('_') + 1, id.indexOf('_') + 1 + TIME_LENGTH);
  let ms = 0;
  for (const char of encoded) ms = ms * 32 + ALPHABET.indexOf(char);
  return ms;
}

/** The least id of `kind` made at `ms` or later: ids after it (as strings) were made at or after that millisecond. */
export function idFloorAt(kind: ResourceKind, ms: number): string {
  return `${kind}_${encodeTime(Math.max(0, Math.floor(ms)))}${ALPHABET[0]!.repeat(RANDOM_LENGTH)}`;
}
