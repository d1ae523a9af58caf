// Reproducible bundles: the same project files give the same tar.gz bytes, hence the same
// bundle_ref, on any checkout. Used by envctl to pack a project and by tests to make bundles.
export { packReproducible, bundleRefOf, type BundleFile } from './reproducible-tar.ts';
export { collectProjectFiles, DEFAULT_IGNORES, IGNORE_FILE, type CollectOptions, type ProjectFiles } from './project-files.ts';
export { packProject, type PackedProject } from './pack-project.ts';
