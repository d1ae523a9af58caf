import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { EnvironmentAccess, INTERNAL_HEADERS } from '@envengine/contracts';
import { activeTraceIds, type Logger } from '@envengine/process-kit';

export interface RequestContext {
  requestId: string;
  tenantId: string | undefined;
  /**
   * Who asked, as the gateway names them (an API token's id, `worker:<pool credential>`),
   * or `engine` for a service's own call: what the events the request causes record.
   */
  actor: string;
  /** The environments the caller's token may see (the gateway's header); every one for the engine's own calls. */
  environments: EnvironmentAccess;
  log: Logger;
}

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestContext(res: Response): RequestContext {
  return res.locals.context as RequestContext;
}

export function newRequestId(): string {
  // randomUUID draws from a cached entropy pool: far cheaper per call than randomBytes.
  return `req_${randomUUID().replaceAll('-', '').slice(0, 24)}`;
}

/** Per-request context; the child logger is made only when a handler asks for it. */
class LazyRequestContext implements RequestContext {
  tenantId: string | undefined = undefined;
  actor = 'engine';
  environments = EnvironmentAccess.ALL;
  private childLog: Logger | undefined;

  constructor(
    readonly requestId: string,
    private readonly baseLog: Logger,
  ) {}

  get log(): Logger {
    this.childLog ??= this.baseLog.child({ req_id: this.requestId });
    return this.childLog;
  }
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
    const context = new LazyRequestContext(requestId, log);
    // Read now: the 'close' event below runs outside the request's trace context.
    const traceIds = activeTraceIds();
    res.locals.context = context;
    res.setHeader('X-Request-Id', requestId);
    // 'close' also fires for a client that leaves before the answer is complete.
    res.on('close', () => {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      log.info(
        {
          req_id: requestId,
          method: req.method,
          path: req.originalUrl.split('?', 1)[0],
          status: res.statusCode,
          duration_ms: Math.round(durationMs * 100) / 100,
          tenant_id: context.tenantId,
          ...traceIds,
          ...(res.writableFinished ? {} : { aborted: true }),
        },
        'request',
      );
    });
    next();
  };
}
