import { ConflictError, UsdcBatchError } from '../domain/errors.ts';

/** A batch or transfer an operator named does not exist (the HTTP API answers 404). */
export class NotFoundError extends UsdcBatchError {
  override name = 'NotFoundError';
}

/**
 * Four eyes (docs/access.md "Four eyes"): the submitter of a batch may not approve it. HTTP 403 with code
 * `four_eyes`; the CLI exits 4.
 */
export class FourEyesError extends UsdcBatchError {
  override name = 'FourEyesError';
  constructor(batchId: string, actor: string) {
    super('four_eyes', `${actor} submitted batch ${batchId}: another approver must approve it (four eyes)`, {
      meta: { batchId },
    });
  }
}

/**
 * An approval names rows that are not the batch's queued rows any more (a transfer cancelled or
 * re-queued since), or none: HTTP 409 with the current digest; the CLI exits 3.
 */
export class StaleDigestError extends ConflictError {
  override name = 'StaleDigestError';
  readonly currentDigest: string;
  constructor(batchId: string, given: string | undefined, currentDigest: string) {
    super(
      'USDC_APPROVAL_DIGEST_MISMATCH',
      given === undefined
        ? `approving batch ${batchId} names what was reviewed: give its approval_digest (now ${currentDigest})`
        : `batch ${batchId} changed since digest ${given.slice(0, 12)}… was read: its rows to release now have approval_digest ${currentDigest}; review them and approve that`,
      { meta: { batchId } },
    );
    this.currentDigest = currentDigest;
  }
}
