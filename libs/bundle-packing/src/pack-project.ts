import { bundleRefOf, packReproducible } from './reproducible-tar.ts';
import { collectProjectFiles, type CollectOptions } from './project-files.ts';

export interface PackedProject {
  bytes: Buffer;
  bundleRef: string;
  /** The packed paths, in archive order. */
  files: string[];
  warnings: string[];
}

/** Packs a project folder into its reproducible tar.gz and names it as the server will. */
export async function packProject(dir: string, options: CollectOptions = {}): Promise<PackedProject> {
  const { files, warnings } = await collectProjectFiles(dir, options);
  if (files.length === 0) throw new Error(`nothing to pack in ${dir}: every file is ignored, or the folder is empty`);
  const bytes = await packReproducible(files);
  return { bytes, bundleRef: bundleRefOf(bytes), files: files.map((file) => file.path).sort(), warnings };
}
