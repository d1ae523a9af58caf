import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { ApiError } from './api-error.ts';
import { drainRefusedBody } from './refused-body.ts';

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Whether requests of this method may carry a body the API reads. */
export function methodHasBody(method: string): boolean {
  return METHODS_WITH_BODY.has(method);
}

export function isJsonContentType(value: string | undefined): boolean {
  if (!value) return false;
  const mediaType = value.split(';', 1)[0]!.trim().toLowerCase();
  return mediaType === 'application/json' || mediaType.endsWith('+json');
}

/** 413, and the connection closes after it, so the rest of the upload is not read. */
function tooLarge(limitBytes: number): ApiError {
  return new ApiError('payload_too_large', `The request body exceeds ${limitBytes} bytes.`, {
    headers: { Connection: 'close' },
  });
}

/**
 * Reads a whole request body, failing with 413 as soon as it passes `limitBytes` (by the
 * declared Content-Length, or by counting when it is chunked); the refusal is answered
 * once a little more of the body is drained (drainRefusedBody).
 */
export async function readRequestBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limitBytes) {
    await drainRefusedBody(req);
    throw tooLarge(limitBytes);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let settled = false;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      reject(error);
    };
    let refused = false;
    req.on('data', (chunk: Buffer) => {
      if (settled || refused) return;
      received += chunk.length;
      if (received > limitBytes) {
        refused = true;
        chunks.length = 0;
        const refusal = tooLarge(limitBytes);
        void drainRefusedBody(req).then(() => fail(refusal));
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', fail);
    req.on('end', () => {
      if (settled || refused) return;
      settled = true;
      resolve(Buffer.concat(chunks, received));
    });
  });
}

/**
 * Reads a JSON body up to `limitBytes`. An empty body leaves `req.body` undefined, so that
 * each route decides whether a body is required; a non-empty one must be JSON and
 * declared as such.
 */
export function jsonBody(limitBytes: number) {
  return async (req: Request, _res: Response, next: NextFunction): Promise<void> => {
    if (!methodHasBody(req.method)) {
      next();
      return;
    }
    try {
      const raw = await readRequestBody(req, limitBytes);
      req.body = parseJsonBody(raw, req.headers['content-type']);
      next();
    } catch (error) {
      next(error);
    }
  };
}

/**
 * How deep a JSON body may nest (objects and arrays). No request of the API needs more
 * than a few levels; a deeper one (5,000 levels of a binding's config) reached MongoDB's
 * own limit of 100 and answered 500.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * Whether JSON text nests objects and arrays deeper than `maxDepth`, read from its bytes
 * without parsing it (brackets inside strings do not count), stopping at the first level
 * too deep. Text that is not JSON is left to the parser to refuse.
 */
export function jsonNestsDeeperThan(raw: Uint8Array, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < raw.length; index++) {
    const byte = raw[index]!;
    if (inString) {
      if (byte === 0x5c) index++; // a backslash escapes the next byte
      else if (byte === 0x22) inString = false;
    } else if (byte === 0x22) {
      inString = true;
    } else if (byte === 0x7b || byte === 0x5b) {
      if (++depth > maxDepth) return true;
    } else if (byte === 0x7d || byte === 0x5d) {
      depth--;
    }
  }
  return false;
}

/** 400 `invalid_json` for a body nested deeper than MAX_JSON_DEPTH (the gateway checks it too, before forwarding). */
export function refuseDeepJson(raw: Uint8Array): void {
  if (jsonNestsDeeperThan(raw, MAX_JSON_DEPTH)) {
    throw new ApiError('invalid_json', `The request body nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels.`);
  }
}

/** The parsed body, or undefined for an empty one; 400 `invalid_json` otherwise. */
export function parseJsonBody(raw: Buffer, contentType: string | undefined): unknown {
  if (raw.length === 0) return undefined;
  if (!isJsonContentType(contentType)) {
    throw new ApiError('invalid_json', 'The request body must be JSON sent with Content-Type: application/json.');
  }
  refuseDeepJson(raw);
  const text = raw.toString('utf8');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ApiError('invalid_json', 'The request body is not valid JSON.');
  }
  // The walk runs only when the text can spell the key: as written, or with a `\u` escape.
  const path = text.includes('__proto__') || text.includes('\\u') ? protoKeyPath(body, '') : null;
  if (path !== null) {
    throw new ApiError('invalid_request', 'The request body uses "__proto__" as an object key.', {
      details: [{ path, message: 'must not be "__proto__" (a record would drop it on the way to storage)' }],
    });
  }
  return body;
}

/**
 * Where a parsed body has an own `__proto__` key, or null. JSON.parse makes it an ordinary
 * key (escaped or not), but validation drops it from a record without a word: a binding's
 * setting would vanish between the request and storage. The depth is already bounded.
 */
function protoKeyPath(value: unknown, path: string): string | null {
  if (typeof value !== 'object' || value === null) return null;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = protoKeyPath(value[index], `${path}[${index}]`);
      if (found !== null) return found;
    }
    return null;
  }
  if (Object.hasOwn(value, '__proto__')) return path ? `${path}.__proto__` : '__proto__';
  for (const [key, child] of Object.entries(value)) {
    const found = protoKeyPath(child, path ? `${path}.${key}` : key);
    if (found !== null) return found;
  }
  return null;
}
