import { describe, expect, it } from 'vitest';
import { errorOfBody } from './errors.ts';

describe('errorOfBody', () => {
  const body = { error: { code: 'not_found', message: 'Environment "x" does not exist.', details: [] } };

  it('reads the error of a body, as text or parsed', () => {
    expect(errorOfBody(JSON.stringify(body))).toEqual(body.error);
    expect(errorOfBody(body)).toEqual(body.error);
  });

  it.each([['not JSON', '<html>502 Bad Gateway</html>'], ['empty', ''], ['another shape', { message: 'no' }], ['an unknown code', { error: { code: 'teapot', message: 'x', details: [] } }], ['nothing', undefined]])(
    'answers null for a body that is %s',
    (_what, value) => {
      expect(errorOfBody(value)).toBeNull();
    },
  );
});
