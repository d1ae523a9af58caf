import { describe, expect, it } from 'vitest';
import { keySlot } from './redis-gate.ts';
import { CommandReader, encodeCommand, ProtocolError, replyEnd } from './resp.ts';

const limits = { maxArgumentBytes: 16, maxArguments: 4, maxCommandBytes: 24 };
const text = (commands: Buffer[][]) => commands.map((command) => command.map((arg) => arg.toString()));
/** The reader's complaint about this stream, or undefined. */
const complaint = (bytes: string) => new CommandReader(limits).push(Buffer.from(bytes)).error?.message;

describe('CommandReader', () => {
  it('cuts a stream into commands whatever the chunks, keeping binary arguments whole', () => {
    const stream = Buffer.concat([encodeCommand(['EVALSHA', 'ab', '1', 'k']), encodeCommand(['INFO']), encodeCommand([Buffer.from([0, 13, 10, 255])])]);
    for (const size of [1, 2, 3, 7, stream.length]) {
      const reader = new CommandReader(limits);
      const commands: Buffer[][] = [];
      const raw: Buffer[] = [];
      for (let at = 0; at < stream.length; at += size) {
        const read = reader.push(stream.subarray(at, at + size));
        commands.push(...read.commands);
        raw.push(...read.raw);
      }
      // Each command's bytes as sent, to pass on unchanged.
      expect(raw.map((bytes) => bytes.toString('latin1'))).toEqual([encodeCommand(['EVALSHA', 'ab', '1', 'k']), encodeCommand(['INFO']), encodeCommand([Buffer.from([0, 13, 10, 255])])].map((bytes) => bytes.toString('latin1')));
      expect(text(commands.slice(0, 2))).toEqual([['EVALSHA', 'ab', '1', 'k'], ['INFO']]);
      expect([...commands[2]![0]!]).toEqual([0, 13, 10, 255]);
    }
  });

  it('refuses an inline command, a non-bulk argument and a broken terminator', () => {
    expect(complaint('SET k v\r\n')).toMatch(/RESP arrays/);
    expect(complaint('*1\r\n:1\r\n')).toMatch(/bulk strings/);
    expect(complaint('*1\r\n$2\r\nabXY')).toMatch(/CRLF/);
    expect(complaint('*x\r\n')).toMatch(/not a number/);
  });

  it('refuses what is over a limit from its header, before its bytes arrive', () => {
    expect(complaint('*5\r\n')).toMatch(/1 to 4 arguments/);
    expect(complaint('*0\r\n')).toMatch(/1 to 4 arguments/);
    expect(complaint('*1\r\n$17\r\n')).toMatch(/at most 16 bytes/);
    expect(complaint('*2\r\n$16\r\n0123456789abcdef\r\n$9\r\n')).toMatch(/command is at most 24 bytes/);
    // A header that never ends is not buffered without bound.
    expect(complaint(`*${'1'.repeat(40)}`)).toMatch(/too long/);
  });

  it('gives the commands before the one that broke a limit', () => {
    const read = new CommandReader(limits).push(Buffer.concat([encodeCommand(['INFO']), Buffer.from('*1\r\n$17\r\n')]));
    expect(text(read.commands)).toEqual([['INFO']]);
    expect(read.error).toBeInstanceOf(ProtocolError);
  });
});

describe('replyEnd', () => {
  it('finds the end of each kind of reply, nested, and waits for a partial one', () => {
    const replies = ['+OK\r\n', '-ERR no\r\n', ':42\r\n', '$3\r\nab\n\r\n', '$-1\r\n', '*-1\r\n', '*2\r\n*1\r\n$1\r\na\r\n:7\r\n'];
    const stream = Buffer.from(replies.join(''));
    let at = 0;
    for (const reply of replies) {
      const end = replyEnd(stream, at)!;
      expect(stream.toString('latin1', at, end)).toBe(reply);
      // Every cut inside the reply is incomplete.
      for (let cut = at + 1; cut < end; cut++) expect(replyEnd(stream.subarray(0, cut), at)).toBeUndefined();
      at = end;
    }
  });

  it('refuses a reply type RESP2 does not have', () => {
    expect(() => replyEnd(Buffer.from('%1\r\n'))).toThrow(ProtocolError);
  });
});

describe('keySlot', () => {
  it('gives the slots `CLUSTER KEYSLOT` answers', () => {
    // CRC-16/XMODEM's check value ("123456789" -> 0x31c3) and what redis-server 7 answered.
    expect(keySlot('123456789')).toBe(0x31c3 % 16384);
    expect(keySlot('foo')).toBe(12182);
    expect(keySlot('bar')).toBe(5061);
    expect(keySlot('')).toBe(0);
    expect(keySlot(Buffer.from('foo'))).toBe(12182);
  });

  it('routes the keys of one hash tag to one slot, the slot of the tag itself', () => {
    const tagged = ['envengine:{attempts-ten_1}:wait', 'envengine:{attempts-ten_1}:marker', '{attempts-ten_1}', 'x{attempts-ten_1}y{z}'];
    expect(new Set(tagged.map((key) => keySlot(key)))).toEqual(new Set([keySlot('attempts-ten_1')]));
    expect(keySlot('{user1000}.following')).toBe(keySlot('{user1000}.followers'));
    expect(keySlot('ключ{тег}')).toBe(keySlot(Buffer.from('тег')));
    // Without the tag the same names spread over slots, and a lone or unclosed brace hashes the whole key.
    expect(new Set(['envengine:attempts-ten_1:wait', 'envengine:attempts-ten_1:marker', 'envengine:attempts-ten_1:active'].map((key) => keySlot(key))).size).toBeGreaterThan(1);
    expect(keySlot('{')).not.toBe(keySlot(''));
    expect(keySlot('a{b')).not.toBe(keySlot('b'));
  });

  it("follows Redis's rules for odd hash tags, where ioredis's package differs", () => {
    // What `CLUSTER KEYSLOT` answered on redis-server 7: an empty tag hashes the whole key,
    // and the tag is from the first `{` to the first `}` after it.
    expect(keySlot('foo{}{bar}')).toBe(8363);
    expect(keySlot('{}{bar}')).toBe(11272);
    expect(keySlot('foo{{bar}}zap')).toBe(4015);
    expect(keySlot('foo{bar}{zap}')).toBe(5061);
  });
});
