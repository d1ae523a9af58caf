import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import ignore from 'ignore';
import type { BundleFile } from './reproducible-tar.ts';

/** The project's own ignore file, read from the root of the folder (gitignore syntax). */
export const IGNORE_FILE = '.envctlignore';

/** Never packed, whatever the ignore file says (it may add more, and `!` cannot bring these back). */
// `.git` without a slash: in a worktree or a submodule it is a file.
export const DEFAULT_IGNORES: readonly string[] = ['.git', 'node_modules/', '.DS_Store', '.envengine/', '.envctl/'];

export interface ProjectFiles {
  files: BundleFile[];
  /** What was left out that the user may not expect (links to folders or out of the project). */
  warnings: string[];
}

export interface CollectOptions {
  /** Paths packed even when an ignore rule matches them (the manifest file). */
  alwaysInclude?: readonly string[];
}

const toPosix = (path: string) => path.split(sep).join('/');

/**
 * The files of a project folder as a bundle holds them: every regular file under `dir`,
 * minus the default ignores and the rules of `.envctlignore`. A symbolic link to a file
 * inside the folder is packed as that file's content; other links are left out with a
 * warning, so that a bundle never carries something from outside the project.
 */
export async function collectProjectFiles(dir: string, options: CollectOptions = {}): Promise<ProjectFiles> {
  const root = await realpath(dir);
  const rules = ignore().add([...DEFAULT_IGNORES]);
  const userRules = await readFile(join(root, IGNORE_FILE), 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return '';
    throw error;
  });
  const userIgnore = ignore().add(userRules);
  const forced = new Set(options.alwaysInclude ?? []);
  const files: BundleFile[] = [];
  const warnings: string[] = [];

  const walk = async (folder: string): Promise<void> => {
    const entries = await readdir(folder, { withFileTypes: true });
    for (const entry of entries) {
      const absolute = join(folder, entry.name);
      const path = toPosix(relative(root, absolute)).normalize('NFC');
      let isDirectory = entry.isDirectory();
      let isFile = entry.isFile();
      let source = absolute;
      if (entry.isSymbolicLink()) {
        const target = await realpath(absolute).catch(() => undefined);
        const inside = target !== undefined && (target === root || target.startsWith(root + sep));
        const targetStat = target ? await stat(target) : undefined;
        if (!inside || !targetStat?.isFile()) {
          if (!rules.ignores(path) && !userIgnore.ignores(path)) warnings.push(`${path}: a symbolic link to ${targetStat?.isDirectory() ? 'a folder' : 'something outside the project'}, not packed`);
          continue;
        }
        isFile = true;
        isDirectory = false;
        source = target;
      }
      const asTested = isDirectory ? `${path}/` : path;
      if (rules.ignores(asTested)) continue;
      if (userIgnore.ignores(asTested) && !forced.has(path)) continue;
      if (isDirectory) await walk(absolute);
      else if (isFile) {
        const [content, info] = await Promise.all([readFile(source), stat(source)]);
        files.push({ path, content, executable: (info.mode & 0o100) !== 0 });
      }
    }
  };
  await walk(root);
  return { files, warnings };
}
