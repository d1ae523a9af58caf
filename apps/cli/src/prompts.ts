import { createInterface } from 'node:readline/promises';
import type { CliIo } from './output.ts';

/** All of stdin as bytes (a secret or a token piped in). */
export async function readStdin(io: CliIo): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of io.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks);
}

/** UTF-8 text, refusing bytes that are not, with one trailing newline removed unless `keepNewline`. */
export function decodeSecretText(bytes: Buffer, keepNewline: boolean): string | undefined {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
  return keepNewline ? text : text.replace(/\r?\n$/, '');
}

/**
 * Asks on stderr and reads one line from the terminal without echoing it. Only called
 * when stdin is a terminal and CI is not set.
 */
export function promptHidden(io: CliIo, question: string): Promise<string> {
  const stdin = io.stdin;
  io.stderr.write(question);
  return new Promise((resolve, reject) => {
    let value = '';
    stdin.setRawMode?.(true);
    stdin.setEncoding('utf8');
    stdin.resume();
    const done = (error?: Error) => {
      stdin.setRawMode?.(false);
      stdin.pause();
      stdin.removeListener('data', onData);
      io.stderr.write('\n');
      if (error) reject(error);
      else resolve(value);
    };
    const onData = (chunk: string | Buffer) => {
      for (const char of String(chunk)) {
        if (char === '\r' || char === '\n' || char === '\u0004') return done();
        if (char === '\u0003') return done(new Error('interrupted'));
        if (char === '\u007f' || char === '\b') value = value.slice(0, -1);
        else value += char;
      }
    };
    stdin.on('data', onData);
  });
}

/** Asks on stderr and reads one line (echoed) from the terminal. Only called where envctl may ask (`canPrompt`). */
export async function promptLine(io: CliIo, question: string): Promise<string> {
  const lines = createInterface({ input: io.stdin, output: io.stderr as NodeJS.WritableStream, terminal: false });
  try {
    return (await lines.question(question)).trim();
  } finally {
    lines.close();
  }
}
