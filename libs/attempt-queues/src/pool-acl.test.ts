import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  generatePoolPassword,
  localRunnerAclRules,
  POOL_CONNECTION_COMMANDS,
  POOL_WORKER_SCRIPT_NAMES,
  poolWorkerScripts,
  POOL_SCRIPT_COMMANDS,
  poolAclRules,
  poolRedisUsername,
  poolSetUserArguments,
  sha256Hex,
} from './pool-acl.ts';

const tenant = 'ten_01m813w5p0mba0fr1w8mf0qssv';


/** The Redis commands a BullMQ Lua script calls, its `--- @include`s followed. */
function scriptCommands(file: string, seen = new Set<string>()): Set<string> {
  const commands = new Set<string>();
  if (seen.has(file)) return commands;
  seen.add(file);
  const source = readFileSync(file, 'utf8');
  for (const [, command] of source.matchAll(/(?:rcall|redis\.p?call)\(\s*["']([A-Za-z]+)["']/g)) commands.add(command!.toLowerCase());
  // Commands chosen at run time (`local pushCmd = lifo and 'RPUSH' or 'LPUSH'`).
  for (const [, command] of source.matchAll(/["']([LR]PUSH)["']/g)) commands.add(command!.toLowerCase());
  expect(source).not.toMatch(/rcall\(\s*(?!["'])(?!pushCmd\b)[A-Za-z_]+\s*,/);
  for (const [, include] of source.matchAll(/@include "([^"]+)"/g)) {
    for (const command of scriptCommands(join(dirname(file), `${include}.lua`), seen)) commands.add(command);
  }
  return commands;
}

describe('pool ACL rules', () => {
  const rules = poolAclRules(tenant);

  it("reach the tenant's queue keys only, and no channel", () => {
    expect(rules.filter((rule) => /^[~%&]|^(allkeys|allchannels|allcommands)$/.test(rule))).toEqual([`~envengine:{attempts-${tenant}}:*`]);
    expect(rules.slice(0, 2)).toEqual(['resetchannels', '-@all']);
  });

  it('grant commands one by one: no category, nothing that reads the keyspace or the server', () => {
    const granted = rules.filter((rule) => rule.startsWith('+'));
    expect(granted.filter((rule) => rule.startsWith('+@'))).toEqual([]);
    for (const command of ['eval', 'eval_ro', 'evalsha', 'evalsha_ro', 'fcall', 'keys', 'scan', 'randomkey', 'dbsize', 'flushall', 'flushdb', 'config', 'select', 'function', 'script', 'client', 'client|list', 'client|kill', 'acl', 'debug', 'monitor', 'publish', 'subscribe', 'pubsub', 'move', 'copy', 'rename', 'migrate', 'restore', 'time']) {
      expect(granted).not.toContain(`+${command}`);
    }
    expect(granted).toEqual([
      ...[...POOL_CONNECTION_COMMANDS, ...POOL_SCRIPT_COMMANDS].map((command) => `+${command}`),
      ...poolWorkerScripts().map((script) => `+evalsha|${script.sha1}`),
    ]);
  });

  it("grant EVALSHA of each worker script by the SHA-1 ioredis sends, and of nothing else", () => {
    const scripts = poolWorkerScripts();
    expect(scripts.map((script) => script.name)).toEqual(POOL_WORKER_SCRIPT_NAMES);
    const grants = rules.filter((rule) => rule.startsWith('+evalsha'));
    expect(grants).toHaveLength(POOL_WORKER_SCRIPT_NAMES.length);
    for (const grant of grants) expect(grant).toMatch(/^\+evalsha\|[0-9a-f]{40}$/);
    // The file BullMQ ships, hashed as ioredis hashes a defined command's Lua.
    const commandsDir = join(dirname(createRequire(import.meta.url).resolve('bullmq')), 'commands');
    const moveToActive = readdirSync(commandsDir).find((name) => name.startsWith('moveToActive-') && name.endsWith('.lua'));
    expect(scripts.find((script) => script.name === 'moveToActive')!.content).toContain('Move next job to be processed to active');
    expect(moveToActive).toBeDefined();
  });

  it("give the engine's local runner the same grants on the local queue, and EVAL", () => {
    const runner = localRunnerAclRules();
    expect(runner.filter((rule) => rule.startsWith('~'))).toEqual(['~envengine:{attempts-local}:*']);
    expect(runner).toContain('+eval');
    expect(rules).not.toContain('+eval');
  });

  it("cover exactly what the installed BullMQ's worker scripts call", () => {
    const commandsDir = join(dirname(createRequire(import.meta.url).resolve('bullmq')), 'commands');
    const files = readdirSync(commandsDir);
    const needed = new Set<string>();
    for (const script of POOL_WORKER_SCRIPT_NAMES) {
      const file = files.find((name) => name.startsWith(`${script}-`) && name.endsWith('.lua'));
      expect(file, `BullMQ script ${script}`).toBeDefined();
      for (const command of scriptCommands(join(commandsDir, file!))) needed.add(command);
    }
    expect([...needed].sort()).toEqual([...POOL_SCRIPT_COMMANDS].sort());
  });

  it('make `ACL SETUSER <user> reset on #<sha256> <rules…>`', () => {
    const hash = sha256Hex('pw');
    expect(poolSetUserArguments({ username: 'pool-pcr_1', passwordSha256: hash, tenantId: tenant })).toEqual(['pool-pcr_1', 'reset', 'on', `#${hash}`, ...rules]);
    expect(() => poolSetUserArguments({ username: 'pool-pcr_1', passwordSha256: 'pw', tenantId: tenant })).toThrow(/64/);
    expect(() => poolSetUserArguments({ username: 'default', passwordSha256: hash, tenantId: tenant })).toThrow();
    expect(() => poolSetUserArguments({ username: 'pool-pcr_1', passwordSha256: hash, tenantId: 'ten_*' })).toThrow();
  });
});

describe('pool credentials', () => {
  it('name the Redis user after the credential', () => {
    expect(poolRedisUsername('pcr_01m813w6h15hs4v0df5drka0xx')).toBe('pool-pcr_01m813w6h15hs4v0df5drka0xx');
    for (const bad of ['', 'pcr 1', 'pcr>1', 'PCR_1', 'a'.repeat(65)]) expect(() => poolRedisUsername(bad)).toThrow();
  });

  it('make 32-byte random passwords, kept as SHA-256 hex', () => {
    const password = generatePoolPassword();
    expect(Buffer.from(password, 'base64url')).toHaveLength(32);
    expect(password).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(generatePoolPassword()).not.toBe(password);
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
