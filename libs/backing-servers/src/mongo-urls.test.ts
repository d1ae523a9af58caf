import { describe, expect, it } from 'vitest';
import { withoutCredential } from './backing-server.ts';
import { mongoUrlFor } from './mongo-server.ts';

describe('MongoDB connection strings of a replica set of several members', () => {
  const set = 'mongodb://127.0.0.1:27017,127.0.0.1:27018,127.0.0.1:27019/?replicaSet=rs0';

  it('puts a user on every host of the list, encoded, with authSource admin', () => {
    expect(mongoUrlFor(set, { username: 'placement', password: 'p@ss:/word' })).toBe(
      'mongodb://placement:p%40ss%3A%2Fword@127.0.0.1:27017,127.0.0.1:27018,127.0.0.1:27019/?replicaSet=rs0&authSource=admin',
    );
  });

  it('replaces a credential already there, on one host as on several', () => {
    expect(mongoUrlFor('mongodb://old:secret@127.0.0.1:27017/', { username: 'u', password: 'p' })).toBe('mongodb://u:p@127.0.0.1:27017/?authSource=admin');
    expect(mongoUrlFor('mongodb://old:secret@h1:1,h2:2/db?w=majority', { username: 'u', password: 'p' })).toBe('mongodb://u:p@h1:1,h2:2/db?w=majority&authSource=admin');
  });

  it('shows the list without its credential', () => {
    const withUser = mongoUrlFor(set, { username: 'placement', password: 'hunter2' });
    expect(withoutCredential(withUser)).toBe(`${set}&authSource=admin`);
    expect(withoutCredential(withUser)).not.toContain('hunter2');
    expect(withoutCredential('mongodb://u:p@127.0.0.1:27017/?replicaSet=rs0')).toBe('mongodb://127.0.0.1:27017/?replicaSet=rs0');
    // A comma in a password is no host list: the whole user info goes.
    expect(withoutCredential('mongodb://u:pa,ss@h:27017/db')).toBe('mongodb://h:27017/db');
    expect(withoutCredential('mongodb://u:pa,ss@h1:1,h2:2/?replicaSet=rs0')).toBe('mongodb://h1:1,h2:2/?replicaSet=rs0');
  });
});
