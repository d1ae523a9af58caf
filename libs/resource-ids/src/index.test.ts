import { describe, expect, it } from 'vitest';
import { idFloorAt, idTimestamp, newId } from './index.ts';

describe('newId', () => {
  it('prefixes the kind and encodes the creation time', () => {
    const id = newId('env', 1_700_000_000_123);
    expect(id).toMatch(/^env_[0-9a-hjkmnp-tv-z]{26}$/);
    expect(idTimestamp(id)).toBe(1_700_000_000_123);
  });

  it('sorts ids by creation, also within one millisecond', () => {
    const ids = Array.from({ length: 500 }, () => newId('dep'));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('keeps order when the clock steps back', () => {
    const first = newId('run', Date.now() + 10_000);
    const second = newId('run', Date.now());
    expect(second > first).toBe(true);
  });
});

describe('idFloorAt', () => {
  it('sorts before every id of its millisecond and after every earlier one', () => {
    const at = 1_700_000_000_500;
    const floor = idFloorAt('evt', at);
    expect(idTimestamp(floor)).toBe(at);
    expect(newId('evt') > floor).toBe(true);
    expect(`evt_${newId('evt').slice(4, 14).replace(/./g, '0')}zzzzzzzzzzzzzzzz` < floor).toBe(true);
    expect(idFloorAt('evt', at - 1) < floor).toBe(true);
    expect(floor).toMatch(/^evt_[0-9a-z]{26}$/);
  });
});
