import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The development stack's master key: generated once and kept (mode 0600) in the data
 * directory, so that secrets written before a restart still open after it. Production
 * gives `SECRETS_MASTER_KEY` in the environment instead, and so may a developer.
 */
export function loadOrCreateMasterKey(dataDir: string): string {
  const file = join(dataDir, 'secrets-master-key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  // The format the secrets-service expects: base64 of 32 random bytes.
  const key = randomBytes(32).toString('base64');
  writeFileSync(file, `${key}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return key;
}
