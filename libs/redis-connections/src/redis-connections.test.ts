import { describe, expect, it } from 'vitest';
import { Cluster, Redis } from 'ioredis';
import { connectRedis, parseRedisUrl, redisUrlList } from './redis-connections.ts';

describe('parseRedisUrl', () => {
  it('reads one server, with its credential and database', () => {
    expect(parseRedisUrl('redis://placement:s3cret@10.0.0.5:6380/2')).toEqual({
      nodes: [{ host: '10.0.0.5', port: 6380 }], cluster: false, tls: false, username: 'placement', password: 's3cret', database: 2,
    });
    expect(parseRedisUrl('rediss://queues.example.com')).toMatchObject({ nodes: [{ host: 'queues.example.com', port: 6379 }], tls: true, database: 0 });
  });

  it('reads a list of nodes as a Redis Cluster, the credential from whichever URL carries it', () => {
    expect(parseRedisUrl('redis://admin:p%40ss@127.0.0.1:7000, redis://127.0.0.1:7001,redis://[::1]:7002')).toEqual({
      nodes: [{ host: '127.0.0.1', port: 7000 }, { host: '127.0.0.1', port: 7001 }, { host: '::1', port: 7002 }],
      cluster: true, tls: false, username: 'admin', password: 'p@ss', database: 0,
    });
  });

  it('keeps a comma inside a password', () => {
    expect(redisUrlList('redis://u:a,b@h:1,redis://u:a,b@h:2')).toEqual(['redis://u:a,b@h:1', 'redis://u:a,b@h:2']);
    expect(parseRedisUrl('redis://u:a,b@h:1,redis://u:a,b@h:2').password).toBe('a,b');
  });

  it('refuses what it cannot connect to as written', () => {
    expect(() => parseRedisUrl('http://h:1')).toThrow(/must be a redis:\/\/ or rediss:\/\/ URL/);
    expect(() => parseRedisUrl('redis://h:1,rediss://h:2')).toThrow(/all redis:\/\/ or all rediss:\/\//);
    expect(() => parseRedisUrl('redis://a:x@h:1,redis://b:y@h:2')).toThrow(/one credential/);
    expect(() => parseRedisUrl('redis://h:1/1,redis://h:2/1')).toThrow(/database 0 only/);
    expect(() => parseRedisUrl('')).toThrow(/REDIS_URL/);
  });
});

describe('connectRedis', () => {
  it('makes a Redis for one URL and a Cluster for several, the given credential winning', async () => {
    const single = connectRedis('redis://u:p@127.0.0.1:1', { lazyConnect: true });
    expect(single).toBeInstanceOf(Redis);
    expect(single.options).toMatchObject({ host: '127.0.0.1', port: 1, username: 'u', password: 'p' });
    const cluster = connectRedis('redis://u:p@127.0.0.1:1,redis://127.0.0.1:2', { lazyConnect: true, maxRetriesPerRequest: null }, { username: 'pool-x', password: 'q' });
    expect(cluster).toBeInstanceOf(Cluster);
    expect((cluster as Cluster).options.redisOptions).toMatchObject({ username: 'pool-x', password: 'q', maxRetriesPerRequest: null });
    single.disconnect();
    cluster.disconnect();
  });
});
