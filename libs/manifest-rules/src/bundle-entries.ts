/** `path` without leading `./` segments, as tar writes entry names of `tar -C dir .`. */
function withoutDotSlash(path: string): string {
  let start = 0;
  while (path.startsWith('./', start)) start += 2;
  return path.slice(start);
}

/**
 * Whether the bundle holds the file `entry`. Bundle entry names are compared with and
 * without one leading `./`, so the set can be used as read from the archive.
 */
export function bundleHasEntry(bundleEntries: ReadonlySet<string>, entry: string): boolean {
  const name = withoutDotSlash(entry);
  return bundleEntries.has(name) || bundleEntries.has(`./${name}`);
}
