import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CREDENTIAL_NAMES, credentialFilePath, credentialsDir, loadOrCreateCredentials, newCredentialValues, saveCredentialFile } from './credentials.ts';

describe('credentials', () => {
  it('are generated once into one 0600 file per server, and read back unchanged', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'credentials-'));
    const first = loadOrCreateCredentials(dataDir);
    expect(statSync(credentialsDir(dataDir)).mode & 0o777).toBe(0o700);
    for (const file of ['mongodb', 'redis', 'internal', 's3', 'postgres'] as const) {
      expect(Object.keys(first[file])).toEqual(CREDENTIAL_NAMES[file]);
      for (const value of Object.values(first[file]) as string[]) expect(value).toMatch(/^[0-9a-f]{64}$/);
      expect(statSync(credentialFilePath(dataDir, file)).mode & 0o777).toBe(0o600);
    }
    expect(new Set(Object.values(first).flatMap((file) => Object.values(file))).size).toBe(15);
    expect(loadOrCreateCredentials(dataDir)).toEqual(first);
  });

  it('keep what a file holds and add only what it lacks', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'credentials-'));
    const first = loadOrCreateCredentials(dataDir);
    writeFileSync(credentialFilePath(dataDir, 'internal'), `# edited\nINTERNAL_CREDENTIAL=${'a'.repeat(40)}\n`);
    const second = loadOrCreateCredentials(dataDir);
    expect(second.internal.INTERNAL_CREDENTIAL).toBe('a'.repeat(40));
    expect(second.internal.RESOLVER_CREDENTIAL).toMatch(/^[0-9a-f]{64}$/);
    expect(second.internal.RESOLVER_CREDENTIAL).not.toBe(first.internal.RESOLVER_CREDENTIAL);
    expect(second.mongodb).toEqual(first.mongodb);
    expect(readFileSync(credentialFilePath(dataDir, 'internal'), 'utf8')).toContain(`RESOLVER_CREDENTIAL=${second.internal.RESOLVER_CREDENTIAL}`);
  });

  it('are replaced whole by a rotation, still 0600', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'credentials-'));
    const first = loadOrCreateCredentials(dataDir);
    const next = newCredentialValues('redis');
    saveCredentialFile(dataDir, 'redis', next);
    expect(loadOrCreateCredentials(dataDir).redis).toEqual(next);
    expect(next).not.toEqual(first.redis);
    expect(statSync(credentialFilePath(dataDir, 'redis')).mode & 0o777).toBe(0o600);
  });
});
