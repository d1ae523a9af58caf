/** At most this many of the bundle's frames are kept: the top of the stack is where the user looks. */
export const MAX_USER_FRAMES = 10;

const FRAME = /^\s+at /;

/**
 * A thrown error as its author needs it: the error's name and message (as its stack's
 * first lines give them), then only the frames of the bundle's own code, each with its
 * file relative to the bundle (`assets/orders.js:3:22`, or the original source when the
 * bundle ships source maps). Frames of Node and of the engine's child script are dropped:
 * they say nothing to the author, and name the engine's paths; with none of the bundle's
 * frames left, the message alone is shown. `bundleRoot` is the bundle's
 * directory as the child saw it (`/bundle` in the sandbox).
 */
export function userFacingError(error: { message: string; stack?: string | undefined }, bundleRoot: string): string {
  const stack = error.stack;
  if (stack === undefined) return error.message;
  const lines = stack.split('\n');
  const firstFrame = lines.findIndex((line) => FRAME.test(line));
  // A stack that does not start with the message (a thrown non-Error, a rewritten stack) keeps the message alone.
  const header = firstFrame === -1 ? stack : lines.slice(0, firstFrame).join('\n');
  const heading = header.includes(error.message) ? header : error.message;
  if (firstFrame === -1) return error.message;
  const root = bundleRoot.replace(/\/+$/, '');
  const frames = lines
    .slice(firstFrame)
    .flatMap((line) => {
      const relative = bundleRelativeFrame(line, root);
      return relative === null ? [] : [relative];
    })
    .slice(0, MAX_USER_FRAMES);
  // None of the bundle's code on the stack (the engine's own refusals): the message says it all.
  return frames.length === 0 ? error.message : [heading, ...frames].join('\n');
}

/** One `at …` line with its location made bundle-relative, or null when it is not in the bundle. */
function bundleRelativeFrame(line: string, root: string): string | null {
  const rootPattern = escapeRegExp(root);
  // `file:///bundle/assets/x.js:3:22` or a CommonJS path `/bundle/assets/x.js:3:22`.
  // Only where a location starts (after `at ` or `(`), so a longer path that merely holds the root is not taken.
  const location = new RegExp(`(^|[\\s(])(?:file://)?${rootPattern}/([^\\s():]+(?::\\d+){1,2})`);
  const match = location.exec(line.trim());
  if (!match) return null;
  let relative = match[2]!;
  try {
    relative = decodeURIComponent(relative);
  } catch {
    // Left as written.
  }
  return `    ${line.trim().replace(match[0], `${match[1]}${relative}`)}`;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
