import { mkdtempSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultConfigFile, loadCliEnvironment } from './config.ts';
import { DEFAULT_URL, normalizeUrl, readConfigFile, resolveSettings, writeConfigFile } from './settings.ts';

describe('resolveSettings', () => {
  const file = { url: 'http://file:1', token: 'file-token' };
  const environment = { url: 'http://env:2', token: 'env-token' };
  const flags = { url: 'http://flag:3', token: 'flag-token' };

  it('takes each setting from the flag, then the environment, then the config file', () => {
    expect(resolveSettings({ flags, environment, file })).toEqual({ url: 'http://flag:3', urlSource: 'flag', token: 'flag-token', tokenSource: 'flag' });
    expect(resolveSettings({ flags: {}, environment, file })).toEqual({ url: 'http://env:2', urlSource: 'environment', token: 'env-token', tokenSource: 'environment' });
    expect(resolveSettings({ flags: {}, environment: {}, file })).toEqual({ url: 'http://file:1', urlSource: 'config file', token: 'file-token', tokenSource: 'config file' });
    // Independently per setting: a URL flag does not drop the token of the environment.
    expect(resolveSettings({ flags: { url: flags.url }, environment: { token: environment.token }, file })).toMatchObject({ urlSource: 'flag', tokenSource: 'environment' });
  });

  it('falls back to the local engine for the URL and to no token', () => {
    expect(resolveSettings({ flags: {}, environment: {}, file: {} })).toEqual({ url: DEFAULT_URL, urlSource: 'default', token: undefined, tokenSource: undefined });
  });

  it('normalizes the URL to the gateway base', () => {
    expect(normalizeUrl('http://127.0.0.1:8080/')).toBe('http://127.0.0.1:8080');
    expect(normalizeUrl('https://api.example.com/api/v1/')).toBe('https://api.example.com');
    expect(() => normalizeUrl('127.0.0.1:8080')).toThrow(/http or https|not a URL/);
    expect(() => normalizeUrl('nope')).toThrow(/not a URL/);
  });
});

describe('loadCliEnvironment', () => {
  it('reads ENVCTL_*, CI and NO_COLOR, and keeps ENVCTL_* out of what children inherit', () => {
    const env = loadCliEnvironment({ ENVCTL_URL: 'http://x', ENVCTL_TOKEN: 't', CI: 'true', NO_COLOR: '1', HOME: '/home/u', PATH: '/bin' });
    expect(env).toMatchObject({ url: 'http://x', token: 't', ci: true, noColor: true, configFile: '/home/u/.config/envctl/config.json' });
    expect(env.inherited).toEqual({ CI: 'true', NO_COLOR: '1', HOME: '/home/u', PATH: '/bin' });
    expect(loadCliEnvironment({ CI: 'false', NO_COLOR: '' })).toMatchObject({ ci: false, noColor: false });
    expect(loadCliEnvironment({ ENVCTL_CONFIG: '/etc/envctl.json' }).configFile).toBe('/etc/envctl.json');
    expect(defaultConfigFile({ XDG_CONFIG_HOME: '/xdg', HOME: '/home/u' })).toBe('/xdg/envctl/config.json');
  });
});

describe('the config file', () => {
  it('is written with mode 0600 in a 0700 folder, and read back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'envctl-config-'));
    const path = join(dir, 'envctl', 'config.json');
    await writeConfigFile(path, { url: 'http://x', token: 'secret-token' });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'envctl')).mode & 0o777).toBe(0o700);
    const warnings: string[] = [];
    expect(await readConfigFile(path, (line) => warnings.push(line))).toEqual({ url: 'http://x', token: 'secret-token' });
    expect(warnings).toEqual([]);
  });

  it('warns when others can read it, is empty when missing, and refuses what is not JSON', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'envctl-config-'));
    const path = join(dir, 'config.json');
    expect(await readConfigFile(path, () => {})).toEqual({});
    writeFileSync(path, '{"token":"t"}');
    chmodSync(path, 0o644);
    const warnings: string[] = [];
    await readConfigFile(path, (line) => warnings.push(line));
    expect(warnings.join()).toContain('chmod 600');
    writeFileSync(path, 'token=t');
    await expect(readConfigFile(path, () => {})).rejects.toMatchObject({ exitCode: 2, code: 'config_invalid' });
  });
});
