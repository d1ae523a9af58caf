import { randomBytes } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { INTERNAL_HEADERS } from '@envengine/contracts';
import type { Logger } from './logger.ts';

export interface RequestContext {
  requestId: string;
  tenantId: string | undefined;
  log: Logger;
}

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestContext(res: Response): RequestContext {
  return res.locals.context as RequestContext;
}

export function newRequestId(): string {
  return `req_${randomBytes(12).toString('hex')}`;
}

/**
 * Gives every request an id (kept from `X-Request-Id` when well formed), echoes it in the
 * response, and writes one structured log line when the response is finished.
 */
export function requestLogging(log: Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const incoming = req.headers[INTERNAL_HEADERS.requestId];
    const requestId =
      typeof incoming === 'string' && REQUEST_ID_PATTERN.test(incoming) ? incoming : newRequestId();
    const started = process.hrtime.bigint();
    const context: RequestContext = { requestId, tenantId: undefined, log: log.child({ req_id: requestId }) };
    res.locals.context = context;
    res.setHeader('X-Request-Id', requestId);
    res.on('finish', () => {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      context.log.info(
        {
          method: req.method,
          path: req.originalUrl.split('?', 1)[0],
          status: res.statusCode,
          duration_ms: Math.round(durationMs * 100) / 100,
          tenant_id: context.tenantId,
        },
        'request',
      );
    });
    next();
  };
}
