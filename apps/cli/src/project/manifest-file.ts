import { readFile, stat } from 'node:fs/promises';
import { packProject, type PackedProject } from '@envengine/bundle-packing';
import type { OptionSpec } from '../command-line.ts';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { CliError, ExitCode, usageError } from '../exit-codes.ts';

/** The manifest's file name in a project folder, unless `--manifest` names another. */
export const MANIFEST_FILE = 'manifest.json';

export interface ManifestFile {
  /** The path inside the project (and the bundle), `/`-separated. */
  pathInProject: string;
  manifest: Record<string, unknown>;
}

/** Reads the project's manifest (a JSON object); it must sit inside the project, since it is packed with it. */
export async function readManifestFile(projectDir: string, manifestOption: string | undefined): Promise<ManifestFile> {
  const file = manifestOption === undefined ? join(projectDir, MANIFEST_FILE) : resolve(manifestOption);
  const pathInProject = relative(projectDir, file).split(sep).join('/');
  if (pathInProject.startsWith('../') || isAbsolute(pathInProject)) throw usageError(`the manifest ${file} must be inside the project folder ${projectDir}`);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      // Say what is missing: the folder itself, or the manifest in it.
      const folder = await stat(projectDir).catch(() => undefined);
      if (!folder) throw usageError(`the project folder ${projectDir} does not exist`);
      if (!folder.isDirectory()) throw usageError(`${projectDir} is not a folder (give the project's folder)`);
    }
    throw usageError(code === 'ENOENT' ? `no ${pathInProject} in ${projectDir} (the project's manifest; --manifest names another file)` : `cannot read ${file}: ${(error as Error).message}`);
  }
  let manifest: unknown;
  try {
    manifest = JSON.parse(text);
  } catch (error) {
    throw usageError(`${file} is not valid JSON: ${(error as Error).message}`);
  }
  if (manifest === null || typeof manifest !== 'object' || Array.isArray(manifest)) throw usageError(`${file} must hold a JSON object (the manifest)`);
  return { pathInProject, manifest: manifest as Record<string, unknown> };
}

export const MANIFEST_OPTION: Record<string, OptionSpec> = {
  manifest: { type: 'string', value: 'FILE', description: 'the manifest file (default DIR/manifest.json); always packed' },
};

/** A project folder read and packed: its manifest, and its bundle with the manifest always in it. */
export async function readAndPackProject(projectDir: string, manifestOption: string | undefined, warn: (line: string) => void): Promise<ManifestFile & { packed: PackedProject }> {
  const manifestFile = await readManifestFile(projectDir, manifestOption);
  let packed: PackedProject;
  try {
    packed = await packProject(projectDir, { alwaysInclude: [manifestFile.pathInProject] });
  } catch (error) {
    throw new CliError(ExitCode.usage, 'pack_failed', (error as Error).message);
  }
  for (const warning of packed.warnings) warn(warning);
  return { ...manifestFile, packed };
}
