import { UsdcBatchError } from '../domain/errors.ts';

/** A batch or transfer an operator named does not exist (the HTTP API answers 404). */
export class NotFoundError extends UsdcBatchError {
  override name = 'NotFoundError';
}
