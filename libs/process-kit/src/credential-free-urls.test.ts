import { describe, expect, it } from 'vitest';
import { withoutCredential } from './config.ts';

describe('withoutCredential on Redis URLs', () => {
  it('removes the credential of one URL', () => {
    expect(withoutCredential('redis://placement:s3cret@10.0.0.5:6379')).toBe('redis://10.0.0.5:6379');
  });

  it("removes it from every node of a cluster's list, a comma in a password included", () => {
    const shown = withoutCredential('redis://admin:a,b@127.0.0.1:7000,redis://admin:a,b@127.0.0.1:7001');
    expect(shown).toBe('redis://127.0.0.1:7000,redis://127.0.0.1:7001');
    expect(shown).not.toContain('a,b');
  });
});
