import type { NextFunction, Request, Response } from 'express';
import { randomBytes } from 'node:crypto';
import { ApiError } from './api-error.ts';
import { requestContext } from './request-context.ts';
import { isBackingServerUnavailable } from './unavailable.ts';

/**
 * The one edge that turns errors into responses. Domain errors keep their code; an
 * unreachable backing server is 503; anything else is a 500 whose body carries only an
 * error id that the log line also has, never a stack trace or a driver message.
 */
export function errorHandler() {
  return (error: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const context = requestContext(res);
    if (res.headersSent || req.socket.destroyed || isClientGone(error)) {
      // Nothing more can be answered: the client left, or a streamed answer broke.
      context?.log.debug({ err: describe(error) }, 'request ended early');
      res.destroy();
      return;
    }
    let apiError: ApiError;
    if (error instanceof ApiError) {
      apiError = error;
    } else if (error instanceof URIError) {
      apiError = new ApiError('invalid_request', 'The request path is not valid percent-encoding.', {
        details: [{ path: 'path', message: 'has a malformed %-escape' }],
      });
    } else if (isBackingServerUnavailable(error)) {
      context?.log.warn({ err: describe(error) }, 'backing server unavailable');
      apiError = new ApiError('unavailable', 'A backing server is unreachable; try again shortly.', {
        headers: { 'Retry-After': '2' },
      });
    } else if (isBodyParserError(error)) {
      apiError = new ApiError('invalid_json', 'The request body could not be read.');
    } else {
      const errorId = `err_${randomBytes(8).toString('hex')}`;
      context?.log.error({ err: describe(error), error_id: errorId }, 'unhandled error');
      apiError = new ApiError('internal_error', `An internal error occurred (error id ${errorId}).`);
    }
    for (const [name, value] of Object.entries(apiError.headers)) res.setHeader(name, value);
    res.status(apiError.status).json(apiError.toBody());
  };
}

function isClientGone(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  const message = (error as { message?: unknown } | undefined)?.message;
  return code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE' || message === 'aborted';
}

function isBodyParserError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && 'type' in error && typeof (error as { type: unknown }).type === 'string' && 'status' in error;
}

/** Name, message and stack only: never a whole driver error object, which may echo queries. */
function describe(error: unknown): { name: string; message: string; stack?: string } {
  if (error instanceof Error) return { name: error.name, message: error.message, stack: error.stack };
  return { name: 'NonError', message: String(error) };
}

export function routeNotFound() {
  return (req: Request, _res: Response, next: NextFunction): void => {
    next(new ApiError('not_found', `No route matches ${req.method} ${req.path}.`));
  };
}
