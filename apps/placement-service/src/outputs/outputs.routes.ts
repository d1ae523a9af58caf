import { pipeline } from 'node:stream/promises';
import { Router, type NextFunction, type Request, type Response } from 'express';
import { AssetMaterializationPathParams, PARQUET_MEDIA_TYPE, PublicApi } from '@envengine/contracts';
import { ApiError, mountEndpoint, mountRawEndpoint, requestContext, validateRequestPart } from '@envengine/service-kit';
import type { MaterializationReader } from './materialization-reader.ts';
import { parseByteRange } from './byte-range.ts';

/** A tenant's outputs: a materialization's Parquet bytes (Range supported) and its first rows. */
export function outputsRouter(reader: MaterializationReader): Router {
  const router = Router();

  mountRawEndpoint(router, PublicApi.downloadMaterialization, async (req: Request, res: Response, next: NextFunction) => {
    try {
      const context = requestContext(res);
      if (!context.tenantId) throw new ApiError('unauthorized', 'The caller is not known.');
      const params = validateRequestPart(AssetMaterializationPathParams, req.params, 'path');
      const rangeHeader = req.headers.range;
      const opened = await reader.open(context.tenantId, { environmentName: params.name, assetKey: params.key, materializationId: params.id }, context.requestId);
      try {
        // A stored file never changes under its id: the id is its validator.
        const etag = `"${opened.materialization.id}"`;
        const ifRange = req.headers['if-range'];
        const range = rangeHeader === undefined || (ifRange !== undefined && ifRange !== etag) ? null : parseByteRange(rangeHeader, opened.size);
        if (range === 'unsatisfiable') {
          throw new ApiError('range_not_satisfiable', `The file has ${opened.size} bytes; no byte of "${rangeHeader}" is in it.`, {
            headers: { 'Content-Range': `bytes */${opened.size}` },
          });
        }
        res.setHeader('Content-Type', PARQUET_MEDIA_TYPE);
        res.setHeader('Accept-Ranges', 'bytes');
        res.setHeader('ETag', etag);
        res.setHeader('Cache-Control', 'private, max-age=31536000, immutable');
        res.setHeader('Content-Disposition', `attachment; filename="${params.key.replace(/[^A-Za-z0-9._-]/g, '_')}-${opened.materialization.id}.parquet"`);
        if (range === null) {
          res.status(200).setHeader('Content-Length', String(opened.size));
          await pipeline(await opened.stream(), res);
        } else {
          res.status(206);
          res.setHeader('Content-Range', `bytes ${range.start}-${range.end}/${opened.size}`);
          res.setHeader('Content-Length', String(range.end - range.start + 1));
          await pipeline(await opened.stream(range), res);
        }
      } finally {
        opened.close();
      }
    } catch (error) {
      // Once bytes are on their way, a failure can only cut the response short.
      if (res.headersSent) res.destroy(error as Error);
      else next(error);
    }
  });

  mountEndpoint(router, PublicApi.previewMaterialization, async ({ tenantId, params, query, requestId }) => ({
    data: await reader.preview(tenantId, { environmentName: params.name, assetKey: params.key, materializationId: params.id }, query.limit, requestId),
  }));

  return router;
}
