import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { GitInfo } from '@envengine/contracts';

const execFileAsync = promisify(execFile);

/** What the server assumes when an ingest names no git. */
export const NO_GIT: GitInfo = { branch: 'local', sha: 'local' };

/**
 * Branch and commit of the checkout holding `dir`; `local` for both outside a checkout
 * (or without git). Uncommitted changes under `dir` mark the sha: `<sha>-dirty`. A
 * detached HEAD is branch `HEAD`. `env` is git's environment (envctl's own settings left out).
 */
export async function gitInfoOf(dir: string, env: Record<string, string>): Promise<GitInfo> {
  const git = async (...args: string[]): Promise<string | undefined> => {
    try {
      const { stdout } = await execFileAsync('git', args, { cwd: dir, timeout: 10_000, env: { ...env, GIT_OPTIONAL_LOCKS: '0' } });
      return stdout.trim();
    } catch {
      return undefined;
    }
  };
  if ((await git('rev-parse', '--is-inside-work-tree')) !== 'true') return NO_GIT;
  const sha = await git('rev-parse', 'HEAD');
  if (!sha) return NO_GIT;
  const branch = (await git('symbolic-ref', '--short', '-q', 'HEAD')) || 'HEAD';
  const status = await git('status', '--porcelain', '--untracked-files=normal', '--', '.');
  return { branch, sha: status === '' ? sha : `${sha}-dirty` };
}

