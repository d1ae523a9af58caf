import { Redis } from 'ioredis';
import { z } from 'zod';
import { createLogger, LogLevel, parseConfig, PortFromEnv, startHealthServer, stopOnSignals } from '@envengine/service-kit';

const config = parseConfig(
  z.object({
    REDIS_URL: z.string({ message: 'is required' }).min(1),
    /** The pool this worker belongs to: one pool per tenant for `remote` attempts. */
    POOL_NAME: z.string().default('default'),
    HOST: z.string().default('127.0.0.1'),
    PORT: PortFromEnv(8085),
    LOG_LEVEL: LogLevel,
  }),
  process.env,
);
const log = createLogger('attempt-worker', config.LOG_LEVEL);

// Takes remote attempts from its pool's BullMQ queue once the runs issue adds them; for
// now it holds its Redis connection and reports whether Redis answers.
const redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: null });
redis.on('error', (error: Error) => log.warn({ err: error.message }, 'redis error'));

const server = await startHealthServer({
  service: 'attempt-worker',
  host: config.HOST,
  port: config.PORT,
  log,
  readiness: { redis: async () => (await redis.ping()) === 'PONG' },
});
log.info({ port: server.port, pool: config.POOL_NAME }, 'attempt-worker ready');

stopOnSignals(log, async () => {
  await server.close();
  redis.disconnect();
});
