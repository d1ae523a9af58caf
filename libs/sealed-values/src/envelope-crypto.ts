import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { MasterKey, MasterKeyring } from './master-keyring.ts';

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const DATA_KEY_BYTES = 32;

/** A secret value sealed under a fresh data key, and that data key wrapped by a master key. */
export interface SealedValue {
  ciphertext: Buffer;
  iv: Buffer;
  tag: Buffer;
  wrappedKey: WrappedDataKey;
}

export interface WrappedDataKey {
  ciphertext: Buffer;
  iv: Buffer;
  tag: Buffer;
  masterKeyId: string;
}

/** A record failed its integrity check: tampered, moved to another record, or the wrong master key. */
export class SecretIntegrityError extends Error {
  override readonly name = 'SecretIntegrityError';
}

function encrypt(key: Buffer, plaintext: Buffer, aad: string): { ciphertext: Buffer; iv: Buffer; tag: Buffer } {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(ALGORITHM, key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { ciphertext, iv, tag: cipher.getAuthTag() };
}

function decrypt(key: Buffer, sealed: { ciphertext: Buffer; iv: Buffer; tag: Buffer }, aad: string, what: string): Buffer {
  try {
    const decipher = createDecipheriv(ALGORITHM, key, sealed.iv);
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(sealed.tag);
    return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]);
  } catch {
    throw new SecretIntegrityError(`${what} failed authentication: the record was altered, or the master key is wrong`);
  }
}

// The data key is bound to its record, so a wrapped key copied onto another record does not open.
const dataKeyAad = (recordId: string) => `envengine/data-key/v1/${recordId}`;
const valueAad = (recordId: string) => `envengine/secret-value/v1/${recordId}`;

function wrap(dataKey: Buffer, masterKey: MasterKey, recordId: string): WrappedDataKey {
  return { ...encrypt(masterKey.key, dataKey, dataKeyAad(recordId)), masterKeyId: masterKey.id };
}

function unwrap(wrapped: WrappedDataKey, keyring: MasterKeyring, recordId: string): Buffer {
  return decrypt(keyring.get(wrapped.masterKeyId).key, wrapped, dataKeyAad(recordId), 'the wrapped data key');
}

/** Seals one value for the record `recordId` under a data key of its own. */
export function sealValue(value: string, recordId: string, keyring: MasterKeyring): SealedValue {
  const dataKey = randomBytes(DATA_KEY_BYTES);
  const plaintext = Buffer.from(value, 'utf8');
  try {
    return { ...encrypt(dataKey, plaintext, valueAad(recordId)), wrappedKey: wrap(dataKey, keyring.active, recordId) };
  } finally {
    dataKey.fill(0);
    plaintext.fill(0);
  }
}

export function openValue(sealed: SealedValue, recordId: string, keyring: MasterKeyring): string {
  const dataKey = unwrap(sealed.wrappedKey, keyring, recordId);
  try {
    return decrypt(dataKey, sealed, valueAad(recordId), 'the secret value').toString('utf8');
  } finally {
    dataKey.fill(0);
  }
}

/** The same data key wrapped by the keyring's active master key; the value's ciphertext is untouched. */
export function rewrapDataKey(wrapped: WrappedDataKey, recordId: string, keyring: MasterKeyring): WrappedDataKey {
  const dataKey = unwrap(wrapped, keyring, recordId);
  try {
    return wrap(dataKey, keyring.active, recordId);
  } finally {
    dataKey.fill(0);
  }
}
