import { runCli, type CliResult } from './cli.ts';

/** The operator name `approveCli` approves as unless told: never the submitter of a CLI batch. */
export const APPROVER_NAME = 'second-pair-of-eyes';

/**
 * `usdc-batch approve BATCH` as another operator (docs/access.md "Four eyes": the submitter may not),
 * answering its question yes — or with `--digest` when one is given.
 */
export async function approveCli(
  batchId: string,
  env: Record<string, string | undefined>,
  options: { as?: string; digest?: string } = {},
): Promise<CliResult> {
  const args = ['approve', batchId, ...(options.digest ? ['--digest', options.digest] : [])];
  return await runCli(args, { ...env, USDC_BATCH_OPERATOR: options.as ?? APPROVER_NAME }, { input: 'y\n' });
}
