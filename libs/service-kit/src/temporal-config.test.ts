import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseConfig } from '@envengine/process-kit';
import { temporalConfigShape, temporalConnectionOptions } from './temporal-config.ts';

const schema = z.object(temporalConfigShape);
const dir = mkdtempSync(join(tmpdir(), 'temporal-tls-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe('temporalConnectionOptions', () => {
  it('connects in plain text to the engine’s own Temporal by default', () => {
    expect(temporalConnectionOptions(parseConfig(schema, {}))).toEqual({ address: '127.0.0.1:7233' });
  });

  it('uses mutual TLS with the given PEM files, read at start-up', () => {
    const config = parseConfig(schema, {
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_NAMESPACE: 'envengine',
      TEMPORAL_TLS_CERT: file('client.pem', 'CERT'),
      TEMPORAL_TLS_KEY: file('client.key', 'KEY'),
      TEMPORAL_TLS_CA: file('ca.pem', 'CA'),
      TEMPORAL_TLS_SERVER_NAME: 'temporal',
    });
    expect(config.TEMPORAL_NAMESPACE).toBe('envengine');
    expect(temporalConnectionOptions(config)).toEqual({
      address: 'temporal.internal:7233',
      tls: {
        serverNameOverride: 'temporal',
        serverRootCACertificate: Buffer.from('CA'),
        clientCertPair: { crt: Buffer.from('CERT'), key: Buffer.from('KEY') },
      },
    });
  });

  it('uses server-only TLS with a CA and no client certificate', () => {
    expect(temporalConnectionOptions(parseConfig(schema, { TEMPORAL_TLS_CA: file('ca2.pem', 'CA2') }))).toEqual({
      address: '127.0.0.1:7233',
      tls: { serverRootCACertificate: Buffer.from('CA2') },
    });
  });

  it('refuses a certificate without its key, and a file it cannot read, naming the setting', () => {
    expect(() => temporalConnectionOptions(parseConfig(schema, { TEMPORAL_TLS_CERT: file('lonely.pem', 'C') }))).toThrow(/TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY: give both/);
    expect(() => temporalConnectionOptions(parseConfig(schema, { TEMPORAL_TLS_CA: join(dir, 'missing.pem') }))).toThrow(/TEMPORAL_TLS_CA: cannot read .*missing\.pem \(ENOENT\)/);
  });
});
