import { createHash, randomBytes } from 'node:crypto';

/** A 256-bit key that wraps data keys; its id is a fingerprint, safe to store beside what it wraps. */
export interface MasterKey {
  readonly id: string;
  readonly key: Buffer;
}

export class MasterKeyError extends Error {
  override readonly name = 'MasterKeyError';
}

const MASTER_KEY_BYTES = 32;

/** A new master key, encoded as the configuration expects it (base64 of 32 random bytes). */
export function generateMasterKeyText(): string {
  return randomBytes(MASTER_KEY_BYTES).toString('base64');
}

/** Parses a base64 master key. The error never repeats the text it was given. */
export function parseMasterKey(text: string): MasterKey {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) {
    throw new MasterKeyError('a master key must be base64 (generate one with `npm run admin -- master-key new`)');
  }
  const key = Buffer.from(trimmed, 'base64');
  if (key.length !== MASTER_KEY_BYTES) {
    throw new MasterKeyError(`a master key must decode to ${MASTER_KEY_BYTES} bytes, not ${key.length}`);
  }
  // A one-way fingerprint: it names the key in stored records without revealing it.
  const id = createHash('sha256').update('envengine-master-key-id:').update(key).digest('hex').slice(0, 16);
  return { id, key };
}

/**
 * The active master key (wraps every new data key) and the previous ones (still unwrap
 * what they wrapped), so that a rotation can re-wrap while the service keeps serving.
 */
export class MasterKeyring {
  private readonly byId: Map<string, MasterKey>;

  constructor(
    readonly active: MasterKey,
    previous: readonly MasterKey[] = [],
  ) {
    this.byId = new Map([...previous, active].map((masterKey) => [masterKey.id, masterKey]));
  }

  /** From configuration text: the active key and a comma-separated list of previous ones. */
  static fromText(activeText: string, previousText = ''): MasterKeyring {
    const previous = previousText
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean)
      .map(parseMasterKey);
    return new MasterKeyring(parseMasterKey(activeText), previous);
  }

  get(id: string): MasterKey {
    const masterKey = this.byId.get(id);
    if (!masterKey) {
      throw new MasterKeyError(
        `master key ${id} is not configured: add it to SECRETS_PREVIOUS_MASTER_KEYS until every data key it wrapped is re-wrapped`,
      );
    }
    return masterKey;
  }

  get ids(): string[] {
    return [...this.byId.keys()];
  }
}
