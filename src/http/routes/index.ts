import type { RoutePlugin } from '../route-deps.ts';
import { auditRoute } from './audit.ts';
import { batchApproveRoute } from './batch-approve.ts';
import { batchCancelRoute } from './batch-cancel.ts';
import { batchExportRoute } from './batch-export.ts';
import { batchRetryRoute } from './batch-retry.ts';
import { batchStatusRoute } from './batch-status.ts';
import { batchesListRoute } from './batches-list.ts';
import { batchesPostRoute } from './batches-post.ts';
import { dashboardRoute } from './dashboard.ts';
import { healthzRoute } from './healthz.ts';
import { metricsRoute } from './metrics.ts';
import { readyzRoute } from './readyz.ts';
import { recipientsRoute } from './recipients.ts';
import { treasuryRoute } from './treasury.ts';
import { uiTreasuryRoute } from './ui-treasury.ts';
import { uiRoute } from './ui.ts';
import { openapiRoute } from '../openapi.ts';

/** The API's routes (docs/http-api.md); each file registers one concern. */
export const ROUTES: readonly RoutePlugin[] = [
  healthzRoute,
  readyzRoute,
  batchesPostRoute,
  batchesListRoute,
  batchStatusRoute,
  batchExportRoute,
  batchRetryRoute,
  batchCancelRoute,
  batchApproveRoute,
  auditRoute,
  recipientsRoute,
  treasuryRoute,
  metricsRoute,
  dashboardRoute,
  uiRoute,
  uiTreasuryRoute,
  openapiRoute,
];
