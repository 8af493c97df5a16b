import { controlDigest, type ControlSetting } from '../domain/control-digest.ts';
import { formatUsdc } from '../domain/money.ts';
import type { Config } from './config.ts';

/** The settings of a configuration that are controls (docs/promises.md, promise 5). */
export type ControlConfig = Pick<
  Config,
  | 'approvalThresholdUsdc'
  | 'approvalsRequired'
  | 'maxTransferUsdc'
  | 'maxBatchUsdc'
  | 'maxDailyUsdc'
  | 'newRecipientPolicy'
  | 'newRecipientMaxUsdc'
  | 'screeningLists'
  | 'screeningMaxAgeMs'
  | 'screeningOnchain'
>;

const usdc = (v: bigint | undefined): string => (v === undefined ? 'none' : formatUsdc(v));

/**
 * The one list of control settings, each named by its variable. Every process publishes its digest
 * and the running workers enforce them before signing; a setting added here is compared and shown
 * everywhere.
 */
export function controlSettingsOf(config: ControlConfig): ControlSetting[] {
  return [
    { name: 'APPROVAL_THRESHOLD_USDC', value: usdc(config.approvalThresholdUsdc) },
    { name: 'APPROVALS_REQUIRED', value: String(config.approvalsRequired) },
    { name: 'MAX_TRANSFER_USDC', value: usdc(config.maxTransferUsdc) },
    { name: 'MAX_BATCH_USDC', value: usdc(config.maxBatchUsdc) },
    { name: 'MAX_DAILY_USDC', value: usdc(config.maxDailyUsdc) },
    { name: 'NEW_RECIPIENT_POLICY', value: config.newRecipientPolicy },
    { name: 'NEW_RECIPIENT_MAX_USDC', value: usdc(config.newRecipientMaxUsdc) },
    { name: 'SCREENING_LISTS', value: config.screeningLists.join(',') || 'none' },
    { name: 'SCREENING_MAX_AGE', value: `${Math.round(config.screeningMaxAgeMs / 1000)}s` },
    { name: 'SCREENING_ONCHAIN', value: config.screeningOnchain ? 'on' : 'off' },
  ];
}

/** The digest of a configuration's controls (what a batch records as `controls`). */
export function controlDigestOf(config: ControlConfig): string {
  return controlDigest(controlSettingsOf(config));
}
