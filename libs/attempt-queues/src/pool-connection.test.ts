import { describe, expect, it } from 'vitest';
import { Cluster } from 'ioredis';
import { connectPoolRedis, poolRedisOptions } from './pool-connection.ts';

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
    expect(() => poolRedisOptions('http://redis:6379', 'u', 'p')).toThrow(/must be a redis:\/\/ or rediss:\/\/ URL/);
    expect(() => poolRedisOptions('redis://a:7000,redis://b:7000', 'u', 'p')).toThrow(/names a cluster/);
  });
});

describe('connectPoolRedis', () => {
  it("connects to a Redis Cluster's nodes as the pool's user, under the same rules", () => {
    const cluster = connectPoolRedis('redis://a:7000,redis://b:7001', { username: 'pool-pcr_1', password: 'pw' }, { lazyConnect: true });
    expect(cluster).toBeInstanceOf(Cluster);
    expect((cluster as Cluster).options.redisOptions).toMatchObject({ username: 'pool-pcr_1', password: 'pw', maxRetriesPerRequest: null });
    cluster.disconnect();
    expect(() => connectPoolRedis('redis://admin:secret@a:7000,redis://b:7001', { username: 'u', password: 'p' })).toThrow(/credentials/);
  });
});
