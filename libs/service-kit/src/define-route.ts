import type { NextFunction, Request, Response } from 'express';
import { detailsFromZodError, type EnvironmentAccess } from '@envengine/contracts';
import type { z } from 'zod';
import { ApiError } from './api-error.ts';
import type { Logger } from '@envengine/process-kit';
import { requestContext } from './request-context.ts';

export interface RouteInput<P, B, Q> {
  params: P;
  body: B;
  query: Q;
  tenantId: string;
  requestId: string;
  /** Who asked and in which request: what the events the request causes record. */
  cause: { actor: string; requestId: string };
  /**
   * The environments the caller's token may see. The gateway has checked a `:name` in the
   * path; a route that finds an environment's resource by id, or lists across environments,
   * checks it here (outside is `not_found`, as another tenant's).
   */
  environments: EnvironmentAccess;
  /** A request header's value (the first, when repeated), e.g. the worker API's attempt lease. */
  header: (name: string) => string | undefined;
  log: Logger;
}

export interface RouteResult {
  status?: number;
  data: unknown;
}

export interface RouteSpec<P extends z.ZodType, B extends z.ZodType, Q extends z.ZodType> {
  params?: P;
  body?: B;
  query?: Q;
  /** When true an absent body is validated as `{}`. Default false: the body is required. */
  bodyOptional?: boolean;
}

type Infer<T> = T extends z.ZodType ? z.infer<T> : undefined;

/** A request part (`path`, `query`, `body`) checked against its schema; a 422 naming each problem. */
export function validateRequestPart<T extends z.ZodType>(schema: T, value: unknown, where: string): z.infer<T> {
  const result = schema.safeParse(value);
  if (!result.success) {
    const details = detailsFromZodError(result.error).map((detail) => ({
      ...detail,
      path: where === 'body' ? detail.path : `${where}.${detail.path}`,
    }));
    throw new ApiError('invalid_request', `The request ${where} is invalid.`, { details });
  }
  return result.data;
}

/**
 * The one way routes are declared: the caller's tenant, params, query and body are
 * validated before the handler runs, and its result is sent in the `{data}` envelope.
 */
export function defineRoute<
  P extends z.ZodType = z.ZodUndefined,
  B extends z.ZodType = z.ZodUndefined,
  Q extends z.ZodType = z.ZodUndefined,
>(
  spec: RouteSpec<P, B, Q>,
  handler: (input: RouteInput<Infer<P>, Infer<B>, Infer<Q>>) => Promise<RouteResult>,
) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    try {
      const context = requestContext(res);
      if (!context.tenantId) throw new ApiError('unauthorized', 'The caller is not known.');
      const params = spec.params ? validateRequestPart(spec.params, req.params, 'path') : undefined;
      const query = spec.query ? validateRequestPart(spec.query, req.query, 'query') : undefined;
      let body: unknown;
      if (spec.body) {
        if (req.body === undefined && !spec.bodyOptional) {
          throw new ApiError('invalid_json', 'A JSON request body is required.');
        }
        // Only an absent body stands for `{}`; a JSON `null` is validated, and refused.
        body = validateRequestPart(spec.body, req.body === undefined ? {} : req.body, 'body');
      }
      const result = await handler({
        params: params as Infer<P>,
        body: body as Infer<B>,
        query: query as Infer<Q>,
        tenantId: context.tenantId,
        cause: { actor: context.actor, requestId: context.requestId },
        environments: context.environments,
        requestId: context.requestId,
        header: (name: string) => {
          const value = req.headers[name.toLowerCase()];
          return Array.isArray(value) ? value[0] : value;
        },
        // A child logger costs a little on every request: make it only when used.
        get log() {
          return context.log;
        },
      });
      res.status(result.status ?? 200).json({ data: result.data });
    } catch (error) {
      next(error);
    }
  };
}
