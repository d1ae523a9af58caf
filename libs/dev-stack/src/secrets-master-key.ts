import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A master key of the development stack: generated once and kept (mode 0600) in the data
 * directory, so that what it sealed before a restart still opens after it: the secrets'
 * (`secrets-master-key`) and the webhooks' signing secrets' (`webhooks-master-key`).
 * Production gives `SECRETS_MASTER_KEY` and `WEBHOOKS_MASTER_KEY` in the environment
 * instead, and so may a developer.
 */
export function loadOrCreateMasterKey(dataDir: string, name: 'secrets-master-key' | 'webhooks-master-key' = 'secrets-master-key'): string {
  const file = join(dataDir, name);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  // The format the services expect: base64 of 32 random bytes.
  const key = randomBytes(32).toString('base64');
  writeFileSync(file, `${key}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return key;
}
