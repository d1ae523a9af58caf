import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { claimSpoolDirectory } from './spool-directory.ts';

let base: string;
beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), 'spool-'));
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

it("takes a directory of its own, clears what a gone worker left, and keeps a live one's", async () => {
  await mkdir(join(base, '999999999'));
  await writeFile(join(base, '999999999', 'mat_x.parquet.partial'), 'half');
  await mkdir(join(base, String(process.ppid)));
  const own = await claimSpoolDirectory(base);
  expect(own).toBe(join(base, String(process.pid)));
  expect(existsSync(join(base, '999999999'))).toBe(false);
  expect(existsSync(join(base, String(process.ppid)))).toBe(true);
});
