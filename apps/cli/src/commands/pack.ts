import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { stringOption, type CommandSpec } from '../command-line.ts';
import { MANIFEST_OPTION, readAndPackProject } from '../project/manifest-file.ts';

export const packCommand: CommandSpec = {
  path: ['pack'],
  summary: 'pack a project folder as deploy would, and print its bundle_ref and files (nothing is sent)',
  args: '[DIR]',
  positionals: { min: 0, max: 1 },
  options: {
    ...MANIFEST_OPTION,
    out: { type: 'string', value: 'FILE', description: 'also write the tar.gz to FILE' },
  },
  async run(ctx, { values, positionals }) {
    const { packed } = await readAndPackProject(resolve(positionals[0] ?? '.'), stringOption(values, 'manifest'), (line) => ctx.out.warn(line));
    const out = stringOption(values, 'out');
    if (out !== undefined) await writeFile(out, packed.bytes);
    const result = { bundle_ref: packed.bundleRef, size: packed.bytes.length, files: packed.files };
    ctx.out.data(result, () => [`${packed.bundleRef} (${packed.bytes.length} bytes, ${packed.files.length} files)`, ...packed.files.map((file) => `  ${file}`)].join('\n'));
  },
};
