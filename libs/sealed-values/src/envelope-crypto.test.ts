import { describe, expect, it } from 'vitest';
import { openValue, rewrapDataKey, sealValue, SecretIntegrityError, type SealedValue } from './envelope-crypto.ts';
import { generateMasterKeyText, MasterKeyError, MasterKeyring, parseMasterKey } from './master-keyring.ts';

const keyringA = MasterKeyring.fromText(generateMasterKeyText());
const RECORD = 'sec_0123456789abcdefghjkmnpqrs:1';

function flipFirstBit(buffer: Buffer): Buffer {
  const copy = Buffer.from(buffer);
  copy[0] = copy[0]! ^ 0x01;
  return copy;
}

describe('envelope encryption', () => {
  it('opens what it sealed, and the ciphertext does not contain the value', () => {
    const value = 'postgres://app:hunter2@db/prod ✓';
    const sealed = sealValue(value, RECORD, keyringA);
    expect(openValue(sealed, RECORD, keyringA)).toBe(value);
    expect(sealed.ciphertext.toString('utf8')).not.toContain('hunter2');
    expect(sealed.wrappedKey.masterKeyId).toBe(keyringA.active.id);
  });

  it('uses a fresh data key and IV for every seal', () => {
    const one = sealValue('same', RECORD, keyringA);
    const two = sealValue('same', RECORD, keyringA);
    expect(one.ciphertext.equals(two.ciphertext)).toBe(false);
    expect(one.wrappedKey.ciphertext.equals(two.wrappedKey.ciphertext)).toBe(false);
    expect(one.iv.equals(two.iv)).toBe(false);
  });

  it('seals the empty string and a 64 KiB value', () => {
    for (const value of ['', 'x'.repeat(64 * 1024)]) {
      expect(openValue(sealValue(value, RECORD, keyringA), RECORD, keyringA)).toBe(value);
    }
  });

  const tamperings: Array<[string, (sealed: SealedValue) => SealedValue]> = [
    ['the ciphertext', (s) => ({ ...s, ciphertext: flipFirstBit(s.ciphertext) })],
    ['the value tag', (s) => ({ ...s, tag: flipFirstBit(s.tag) })],
    ['the value IV', (s) => ({ ...s, iv: flipFirstBit(s.iv) })],
    ['the wrapped data key', (s) => ({ ...s, wrappedKey: { ...s.wrappedKey, ciphertext: flipFirstBit(s.wrappedKey.ciphertext) } })],
    ['the data key tag', (s) => ({ ...s, wrappedKey: { ...s.wrappedKey, tag: flipFirstBit(s.wrappedKey.tag) } })],
    ['a truncated ciphertext', (s) => ({ ...s, ciphertext: s.ciphertext.subarray(0, s.ciphertext.length - 1) })],
  ];
  it.each(tamperings)('fails loudly when %s is altered', (_what, tamper) => {
    const sealed = sealValue('value', RECORD, keyringA);
    expect(() => openValue(tamper(sealed), RECORD, keyringA)).toThrow(SecretIntegrityError);
  });

  it('fails when a sealed record is copied onto another record', () => {
    const sealed = sealValue('value', RECORD, keyringA);
    expect(() => openValue(sealed, 'sec_0123456789abcdefghjkmnpqrs:2', keyringA)).toThrow(SecretIntegrityError);
  });

  it('fails when a ciphertext is paired with another version\'s data key', () => {
    const one = sealValue('one', RECORD, keyringA);
    const two = sealValue('two', RECORD, keyringA);
    expect(() => openValue({ ...one, wrappedKey: two.wrappedKey }, RECORD, keyringA)).toThrow(SecretIntegrityError);
  });

  it('fails loudly under a keyring that lacks the master key', () => {
    const sealed = sealValue('value', RECORD, keyringA);
    const keyringB = MasterKeyring.fromText(generateMasterKeyText());
    expect(() => openValue(sealed, RECORD, keyringB)).toThrow(MasterKeyError);
    expect(() => openValue(sealed, RECORD, keyringB)).toThrow(/not configured/);
  });

  it('fails loudly when the record names a master key that did not wrap it', () => {
    const keyringAB = new MasterKeyring(parseMasterKey(generateMasterKeyText()), [keyringA.active]);
    const sealed = sealValue('value', RECORD, keyringA);
    const forged = { ...sealed, wrappedKey: { ...sealed.wrappedKey, masterKeyId: keyringAB.active.id } };
    expect(() => openValue(forged, RECORD, keyringAB)).toThrow(SecretIntegrityError);
  });

  it('re-wraps a data key under a new master key; the old key is then not needed', () => {
    const sealed = sealValue('rotated value', RECORD, keyringA);
    const newKey = parseMasterKey(generateMasterKeyText());
    const during = new MasterKeyring(newKey, [keyringA.active]);
    const rewrapped = { ...sealed, wrappedKey: rewrapDataKey(sealed.wrappedKey, RECORD, during) };
    expect(rewrapped.wrappedKey.masterKeyId).toBe(newKey.id);
    expect(rewrapped.ciphertext.equals(sealed.ciphertext)).toBe(true);
    const after = new MasterKeyring(newKey);
    expect(openValue(rewrapped, RECORD, after)).toBe('rotated value');
    expect(() => openValue(sealed, RECORD, after)).toThrow(MasterKeyError);
  });
});

describe('master keys', () => {
  it('derives a stable id that does not reveal the key', () => {
    const text = generateMasterKeyText();
    const key = parseMasterKey(text);
    expect(parseMasterKey(text).id).toBe(key.id);
    expect(key.id).toMatch(/^[0-9a-f]{16}$/);
    expect(text).not.toContain(key.id);
  });

  it.each([
    ['not base64', 'not base64!'],
    ['too short', Buffer.alloc(16).toString('base64')],
    ['too long', Buffer.alloc(33).toString('base64')],
    ['empty', ''],
  ])('refuses a key that is %s, without repeating it', (_what, text) => {
    let message = '';
    try {
      parseMasterKey(text);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/master key must/);
    if (text.length > 0) expect(message).not.toContain(text);
  });

  it('reads previous keys from a comma-separated list', () => {
    const [a, b, c] = [generateMasterKeyText(), generateMasterKeyText(), generateMasterKeyText()];
    const keyring = MasterKeyring.fromText(a, ` ${b}, ${c} ,`);
    expect(keyring.ids).toHaveLength(3);
    expect(keyring.active.id).toBe(parseMasterKey(a).id);
    expect(keyring.get(parseMasterKey(c).id).id).toBe(parseMasterKey(c).id);
  });
});
