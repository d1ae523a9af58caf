import { IngestOptions } from '@envengine/contracts';
import { describe, expect, it } from 'vitest';
import { CREATED_BY, ingestBody } from './deploy.ts';

describe('ingestBody', () => {
  it('sends the manifest together with the ingest fields and the fixed created_by tag, a body the contract accepts', () => {
    const manifest = { version: 1, assets: [{ key: 'a' }], jobs: [], schedules: [], activate: 'from the manifest' };
    const body = ingestBody({ manifest, bundleRef: `sha256:${'a'.repeat(64)}`, git: { branch: 'main', sha: 'abc-dirty' }, sdkVersion: '0.1.0', activate: false, allowContractChanges: ['a'] });
    expect(body).toEqual({
      version: 1,
      assets: [{ key: 'a' }],
      jobs: [],
      schedules: [],
      manifest,
      bundle_ref: `sha256:${'a'.repeat(64)}`,
      git: { branch: 'main', sha: 'abc-dirty' },
      sdk_version: '0.1.0',
      activate: false,
      allow_contract_changes: ['a'],
      created_by: CREATED_BY,
    });
    expect(IngestOptions.safeParse(body).success).toBe(true);
    expect(CREATED_BY).toBe('envctl');
  });
});
