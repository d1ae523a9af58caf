// Where this worker writes emits' Parquet files before they are stored: a directory of its
// own under SPOOL_DIR (several workers of a host may share the setting), cleared of what
// workers that are gone left behind (an emit cut short by a kill).
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { processIsAlive } from '@envengine/process-kit';


/** `<base>/<pid>`, made empty, after removing the directories of processes that are gone. */
export async function claimSpoolDirectory(base: string): Promise<string> {
  await mkdir(base, { recursive: true, mode: 0o700 });
  for (const name of await readdir(base)) {
    const pid = Number(name);
    if (Number.isInteger(pid) && pid > 0 && (pid === process.pid || !processIsAlive(pid))) await rm(join(base, name), { recursive: true, force: true });
  }
  const own = join(base, String(process.pid));
  await mkdir(own, { mode: 0o700 });
  return own;
}
