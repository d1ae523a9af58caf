import { createHmac, randomBytes } from 'node:crypto';
import { openValue, sealValue, type MasterKeyring, type SealedValue } from '@envengine/sealed-values';

const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;

/** A new Standard Webhooks signing secret: `whsec_` and base64 of 32 random bytes. */
export function newSigningSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/**
 * The `webhook-signature` header of the Standard Webhooks specification: `v1,` and the
 * base64 HMAC-SHA256, under the secret's bytes, of `<webhook-id>.<webhook-timestamp>.<body>`;
 * one per secret, space-separated (after a rotation, the new and the previous one).
 */
export function signatureHeader(secrets: readonly string[], messageId: string, timestampSeconds: number, body: string): string {
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
      return `v1,${createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64')}`;
    })
    .join(' ');
}

// A sealed secret is bound to its webhook and its creation: copied onto another record, it does not open.
const recordId = (webhookId: string, createdAt: Date) => `webhook-secret/${webhookId}/${createdAt.getTime()}`;

/** A signing secret sealed for storage (AES-256-GCM under a data key wrapped by the webhooks' master key), as one string. */
export function sealSigningSecret(secret: string, webhookId: string, createdAt: Date, keyring: MasterKeyring): string {
  const sealed = sealValue(secret, recordId(webhookId, createdAt), keyring);
  const wrapped = sealed.wrappedKey;
  return ['v1', wrapped.masterKeyId, wrapped.ciphertext, wrapped.iv, wrapped.tag, sealed.ciphertext, sealed.iv, sealed.tag]
    .map((part) => (typeof part === 'string' ? part : part.toString('base64')))
    .join('.');
}

export function openSigningSecret(stored: string, webhookId: string, createdAt: Date, keyring: MasterKeyring): string {
  const [version, masterKeyId, ...parts] = stored.split('.');
  if (version !== 'v1' || !masterKeyId || parts.length !== 6) throw new Error(`the signing secret of webhook ${webhookId} is not in a stored form this engine reads`);
  const [keyCiphertext, keyIv, keyTag, ciphertext, iv, tag] = parts.map((part) => Buffer.from(part, 'base64')) as [Buffer, Buffer, Buffer, Buffer, Buffer, Buffer];
  const sealed: SealedValue = { ciphertext, iv, tag, wrappedKey: { ciphertext: keyCiphertext, iv: keyIv, tag: keyTag, masterKeyId } };
  return openValue(sealed, recordId(webhookId, createdAt), keyring);
}
