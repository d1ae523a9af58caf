import { chmodSync, mkdirSync, mkdtempSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { describe, expect, it } from 'vitest';
import { bundleRefOf, packProject, packReproducible } from './index.ts';

function project(files: Record<string, string>, mtime: Date): string {
  const root = mkdtempSync(join(tmpdir(), 'bundle-packing-'));
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
    utimesSync(join(root, path), mtime, mtime);
  }
  return root;
}

interface Entry { name: string; mode: number; mtime: number; uid: number; gid: number; uname: string; gname: string; content: string }

async function entriesOf(bytes: Buffer): Promise<Entry[]> {
  const extract = tar.extract();
  const entries: Entry[] = [];
  const done = (async () => {
    for await (const entry of extract) {
      const chunks: Buffer[] = [];
      for await (const chunk of entry) chunks.push(chunk as Buffer);
      const { name, mode, mtime, uid, gid, uname, gname } = entry.header;
      entries.push({ name, mode: mode!, mtime: mtime!.getTime(), uid: uid!, gid: gid!, uname: uname ?? '', gname: gname ?? '', content: Buffer.concat(chunks).toString() });
    }
  })();
  extract.end(gunzipSync(bytes));
  await done;
  return entries;
}

const FILES = {
  'manifest.json': '{"version":1}',
  'assets/orders.js': 'export default async () => {}',
  'assets/a/b.js': 'export default 1',
  'data/orders.csv': 'id,amount\n1,2\n',
};

describe('packProject', () => {
  it('gives the same bytes for the same files written at other times, in another order, in another folder', async () => {
    const first = project(FILES, new Date('2020-01-01T00:00:00Z'));
    const reversed = Object.fromEntries(Object.entries(FILES).reverse());
    const second = project(reversed, new Date('2024-06-30T12:34:56Z'));
    const [a, b] = await Promise.all([packProject(first), packProject(second)]);
    expect(a.bundleRef).toBe(b.bundleRef);
    expect(a.bytes.equals(b.bytes)).toBe(true);
    expect(a.bundleRef).toBe(bundleRefOf(a.bytes));
    expect(a.bundleRef).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('changes the ref when a byte or an executable bit changes', async () => {
    const base = await packProject(project(FILES, new Date()));
    const edited = await packProject(project({ ...FILES, 'assets/orders.js': 'export default async () => {} ' }, new Date()));
    const executableDir = project(FILES, new Date());
    chmodSync(join(executableDir, 'assets/orders.js'), 0o755);
    const executable = await packProject(executableDir);
    expect(new Set([base.bundleRef, edited.bundleRef, executable.bundleRef]).size).toBe(3);
  });

  it('writes sorted entries with fixed times, owners and modes, and a gzip header without a time stamp', async () => {
    const dir = project(FILES, new Date('2023-03-03T03:03:03Z'));
    chmodSync(join(dir, 'data/orders.csv'), 0o600);
    chmodSync(join(dir, 'assets/orders.js'), 0o700);
    const packed = await packProject(dir);
    const entries = await entriesOf(packed.bytes);
    expect(entries.map((entry) => entry.name)).toEqual(['assets/a/b.js', 'assets/orders.js', 'data/orders.csv', 'manifest.json']);
    expect(packed.files).toEqual(entries.map((entry) => entry.name));
    for (const entry of entries) expect([entry.mtime, entry.uid, entry.gid, entry.uname, entry.gname]).toEqual([0, 0, 0, '', '']);
    expect(entries.map((entry) => entry.mode)).toEqual([0o644, 0o755, 0o644, 0o644]);
    expect(entries[3]!.content).toBe('{"version":1}');
    expect([...packed.bytes.subarray(4, 8)]).toEqual([0, 0, 0, 0]);
    expect(packed.bytes[9]).toBe(3);
  });

  it('leaves out the default ignores and the rules of .envctlignore, but always packs the forced paths', async () => {
    const dir = project(
      {
        ...FILES,
        '.git/HEAD': 'ref: refs/heads/main',
        'node_modules/x/index.js': 'x',
        'sub/node_modules/y.js': 'y',
        'worktree/.git': 'gitdir: /elsewhere',
        '.envctlignore': '# comments and blank lines\n\n*.csv\n/tmp/\n!data/keep.csv\nmanifest.json\n',
        'data/keep.csv': 'k',
        'tmp/scratch.txt': 's',
        'nested/tmp/kept.txt': 'n',
      },
      new Date(),
    );
    const packed = await packProject(dir, { alwaysInclude: ['manifest.json'] });
    expect(packed.files).toEqual(['.envctlignore', 'assets/a/b.js', 'assets/orders.js', 'data/keep.csv', 'manifest.json', 'nested/tmp/kept.txt']);
  });

  it('packs a link to a file inside the project as that file, and warns about links it leaves out', async () => {
    const dir = project(FILES, new Date());
    const outside = project({ 'secret.txt': 'do not pack' }, new Date());
    symlinkSync(join(dir, 'data/orders.csv'), join(dir, 'orders-link.csv'));
    symlinkSync(join(outside, 'secret.txt'), join(dir, 'leak.txt'));
    symlinkSync(join(dir, 'assets'), join(dir, 'assets-link'));
    const packed = await packProject(dir);
    expect(packed.files).toContain('orders-link.csv');
    expect(packed.files).not.toContain('leak.txt');
    expect(packed.files.some((path) => path.startsWith('assets-link'))).toBe(false);
    expect(packed.warnings).toEqual([
      'assets-link: a symbolic link to a folder, not packed',
      'leak.txt: a symbolic link to something outside the project, not packed',
    ]);
    const entries = await entriesOf(packed.bytes);
    expect(entries.find((entry) => entry.name === 'orders-link.csv')!.content).toBe('id,amount\n1,2\n');
  });

  it('refuses an empty project', async () => {
    const dir = project({ '.envctlignore': '*\n' }, new Date());
    await expect(packProject(dir)).rejects.toThrow(/nothing to pack/);
  });
});

describe('packReproducible', () => {
  it('gives the same bytes whatever order the files come in', async () => {
    const files = Object.entries(FILES).map(([path, content]) => ({ path, content }));
    const forward = await packReproducible(files);
    const backward = await packReproducible([...files].reverse());
    expect(backward.equals(forward)).toBe(true);
    expect((await entriesOf(backward)).map((entry) => entry.name)).toEqual(['assets/a/b.js', 'assets/orders.js', 'data/orders.csv', 'manifest.json']);
  });

  it('refuses duplicate and escaping paths', async () => {
    await expect(packReproducible([{ path: 'a.js', content: '1' }, { path: 'a.js', content: '2' }])).rejects.toThrow(/twice/);
    await expect(packReproducible([{ path: '../a.js', content: '1' }])).rejects.toThrow(/relative/);
    await expect(packReproducible([{ path: '/a.js', content: '1' }])).rejects.toThrow(/relative/);
  });

  it('normalizes names to NFC, so that a macOS checkout packs like a Linux one', async () => {
    const nfd = await packReproducible([{ path: 'cafe\u0301.js', content: '1' }]);
    const nfc = await packReproducible([{ path: 'caf\u00e9.js', content: '1' }]);
    expect(bundleRefOf(nfd)).toBe(bundleRefOf(nfc));
  });
});
