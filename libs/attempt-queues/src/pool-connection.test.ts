import { describe, expect, it } from 'vitest';
import { poolRedisOptions } from './pool-connection.ts';

describe('poolRedisOptions', () => {
  it('connects with the pool credential and lets BullMQ block', () => {
    expect(poolRedisOptions('redis://redis.internal:6380', 'pool-pcr_1', 'pw')).toEqual({
      host: 'redis.internal',
      port: 6380,
      username: 'pool-pcr_1',
      password: 'pw',
      maxRetriesPerRequest: null,
    });
    expect(poolRedisOptions('rediss://[::1]/0', 'u', 'p')).toMatchObject({ host: '::1', port: 6379, tls: {} });
  });

  it('refuses URLs that carry another credential, another database or another scheme', () => {
    expect(() => poolRedisOptions('redis://admin:secret@redis:6379', 'u', 'p')).toThrow(/credentials/);
    expect(() => poolRedisOptions('redis://redis:6379/3', 'u', 'p')).toThrow(/database 0/);
    expect(() => poolRedisOptions('http://redis:6379', 'u', 'p')).toThrow(/scheme/);
  });
});
