import { mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stageNodeBinary } from './os-sandbox.ts';

describe("the sandbox's staged Node binary", () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'envengine-staging-test-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  /** A file standing for one install of Node: its bytes and its mtime. */
  const install = (content: string, mtimeSeconds: number) => {
    const path = join(tempDir(), 'node');
    writeFileSync(path, content, { mode: 0o755 });
    utimesSync(path, mtimeSeconds, mtimeSeconds);
    return path;
  };

  it('is one copy for every install of the same binary, however recently installed', () => {
    const base = tempDir();
    const first = stageNodeBinary(base, install('the same node', 1_000_000), 'v24.0.0');
    const reinstalled = stageNodeBinary(base, install('the same node', 2_000_000), 'v24.0.0');
    expect(reinstalled).toBe(first);
    expect(readdirSync(base)).toEqual([first.slice(base.length + 1)]);
    expect(readFileSync(first, 'utf8')).toBe('the same node');
  });

  it('is a copy of its own for another binary', () => {
    const base = tempDir();
    const one = stageNodeBinary(base, install('one node', 1_000_000), 'v24.0.0');
    const other = stageNodeBinary(base, install('another node', 1_000_000), 'v24.0.0');
    expect(other).not.toBe(one);
    expect(readFileSync(other, 'utf8')).toBe('another node');
    expect(readdirSync(base).sort()).toEqual([one, other].map((path) => path.slice(base.length + 1)).sort());
  });
});
