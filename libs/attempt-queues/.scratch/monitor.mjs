import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Queue, Worker, UnrecoverableError } from 'bullmq';

const port = 16390 + Math.floor(Math.random() * 1000);
const dir = mkdtempSync(join(tmpdir(), 'aq-'));
const child = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
await new Promise((r) => setTimeout(r, 300));
const url = `redis://127.0.0.1:${port}`;
const admin = new Redis(url, { maxRetriesPerRequest: null });
await admin.call('ACL', 'SETUSER', 'probe', 'on', '>pw', '+@all', '~*', '&*');
const prefix = 'envengine';
const qname = 'attempts-ten_a';
const queue = new Queue(qname, { connection: admin, prefix });
await queue.add('a', { n: 1 }, { jobId: 'ok1', removeOnComplete: true, removeOnFail: { count: 2 }, attempts: 1 });
await queue.add('a', { n: 2 }, { jobId: 'fail1', removeOnComplete: true, removeOnFail: { count: 2 }, attempts: 1 });
await queue.add('a', { n: 3 }, { jobId: 'unrec1', removeOnComplete: true, removeOnFail: { count: 2 }, attempts: 1 });
await queue.add('a', { n: 4 }, { jobId: 'slow1', removeOnComplete: true, removeOnFail: { count: 2 }, attempts: 1 });
await queue.add('a', { n: 5 }, { jobId: 'fail2', removeOnComplete: true, removeOnFail: { count: 2 }, attempts: 1 });
await queue.add('a', { n: 6 }, { jobId: 'fail3', removeOnComplete: true, removeOnFail: { count: 2 }, attempts: 1 });

const mon = await admin.duplicate().monitor();
const lines = [];
mon.on('monitor', (time, args, source, database) => lines.push({ source, cmd: String(args[0]).toUpperCase(), sub: args[1] }));

const conn = new Redis(url, { username: 'probe', password: 'pw', maxRetriesPerRequest: null });
let done = 0;
const worker = new Worker(qname, async (job) => {
  await job.updateProgress(10);
  await job.log('hello');
  if (job.id.startsWith('fail')) throw new Error('boom');
  if (job.id === 'unrec1') throw new UnrecoverableError('nope');
  if (job.id === 'slow1') await new Promise((r) => setTimeout(r, 2500));
  return 'ok';
}, { connection: conn, prefix, lockDuration: 1000, stalledInterval: 1000, concurrency: 2 });
worker.on('error', (e) => console.log('worker error', e.message));
await new Promise((resolve) => {
  const tick = () => { done += 1; if (done === 6) resolve(); };
  worker.on('completed', tick); worker.on('failed', tick);
});
await new Promise((r) => setTimeout(r, 1500));
await worker.close();
await new Promise((r) => setTimeout(r, 200));
const counts = new Map();
for (const l of lines) {
  const key = `${l.source === 'lua' ? 'lua' : 'client'} ${l.cmd}${l.cmd === 'CLIENT' ? ' ' + l.sub : ''}`;
  counts.set(key, (counts.get(key) ?? 0) + 1);
}
console.log([...counts].sort().map(([k, v]) => `${k} ${v}`).join('\n'));
console.log('clients', [...new Set(lines.map((l) => l.source))]);
await mon.disconnect();
await queue.close();
admin.disconnect();
child.kill();
