import { describe, expect, it } from 'vitest';
import { KeyedSerializer } from './keyed-serializer.ts';

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

describe('KeyedSerializer', () => {
  it('runs tasks of one key one at a time, in order, and other keys alongside', async () => {
    const serializer = new KeyedSerializer();
    const events: string[] = [];
    let running = 0;
    let most = 0;
    const task = (name: string) => async () => {
      running += 1;
      most = Math.max(most, running);
      events.push(`start ${name}`);
      await tick();
      events.push(`end ${name}`);
      running -= 1;
      return name;
    };
    const results = await Promise.all([
      serializer.run('a', task('a1')),
      serializer.run('a', task('a2')),
      serializer.run('b', task('b1')),
    ]);
    expect(results).toEqual(['a1', 'a2', 'b1']);
    expect(events.indexOf('end a1')).toBeLessThan(events.indexOf('start a2'));
    expect(most).toBe(2);
  });

  it('keeps going after a task fails', async () => {
    const serializer = new KeyedSerializer();
    await expect(serializer.run('k', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(serializer.run('k', () => Promise.resolve(7))).resolves.toBe(7);
  });
});
