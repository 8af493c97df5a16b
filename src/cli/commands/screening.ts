import { loadScreeningLists, type ScreeningLists } from '../../config/screening/screening-lists.ts';
import { controlSettingsOf } from '../../config/control-settings.ts';
import { ValidationError } from '../../domain/errors.ts';
import { parseBookAddress } from '../../domain/recipient-key.ts';
import { controlDrift } from '../../ops/control-drift.ts';
import { withCli } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { jsonText, table } from '../format.ts';
import { parseOptions } from '../options.ts';

/**
 * `usdc-batch screening [--json]`: the sanctions lists in force as SCREENING_LISTS names them (file,
 * format, date of issue, addresses per kind, age, stale or not), the on-chain checks on or off, and
 * whether this configuration's controls differ from the running workers'.
 * `usdc-batch screening check ADDRESS… [--json]`: each address's verdict; exit 1 when any is listed
 * (docs/screening.md).
 */
export async function run(args: string[], options: Record<string, unknown>): Promise<number> {
  const flags = parseOptions({ json: 'flag' }, options);
  const [verb, ...addresses] = args;
  if (verb !== undefined && verb !== 'check') {
    throw new ValidationError(
      'USDC_USAGE_SCREENING',
      `unknown screening command "${verb.slice(0, 40)}" (check ADDRESS…)`,
    );
  }
  if (verb === 'check' && addresses.length === 0) {
    throw new ValidationError('USDC_USAGE_SCREENING', 'screening check needs at least one address');
  }
  return await withCli({}, async (ctx) => {
    const { config } = ctx;
    const lists = await loadScreeningLists(config.screeningLists, config.screeningMaxAgeMs);
    if (verb === 'check') return check(lists, addresses, flags.json);
    const now = Date.now();
    const drift = await controlDrift({
      redis: ctx.redis,
      prefix: ctx.prefix,
      settings: controlSettingsOf(config),
    });
    const doc = {
      lists: lists.lists().map((l) => ({
        name: l.name,
        format: l.format,
        date: l.date,
        addresses: l.counts.evm + l.counts.solana + l.counts.other,
        evm: l.counts.evm,
        solana: l.counts.solana,
        other: l.counts.other,
        age_days: Math.floor((now - l.issuedAt) / 86_400_000),
      })),
      stale: lists.staleReason(now) !== undefined,
      stale_reason: lists.staleReason(now) ?? null,
      max_age_days: config.screeningMaxAgeMs / 86_400_000,
      onchain: config.screeningOnchain,
      controls: drift?.text ?? null,
    };
    if (flags.json) {
      process.stdout.write(`${jsonText(doc)}\n`);
      return EXIT.ok;
    }
    const lines = [
      doc.lists.length === 0
        ? 'no sanctions list (SCREENING_LISTS is not set): recipients are not screened against a list'
        : table(
            ['list', 'format', 'date', 'evm', 'solana', 'other', 'age (days)'],
            doc.lists.map((l) => [l.name, l.format, l.date, l.evm, l.solana, l.other, l.age_days]),
          ),
      doc.stale_reason ?? (doc.lists.length > 0 ? `fresh (SCREENING_MAX_AGE ${doc.max_age_days} days)` : ''),
      `on-chain checks (SCREENING_ONCHAIN): ${doc.onchain ? 'on' : 'off'}`,
      ...(drift ? [`controls: ${drift.text}`] : []),
    ];
    process.stdout.write(`${lines.filter((l) => l !== '').join('\n')}\n`);
    return EXIT.ok;
  });
}

/** Each address's verdict; exit 1 when a list names any. */
function check(lists: ScreeningLists, addresses: readonly string[], json: boolean): number {
  const verdicts = addresses.map((text) => {
    const parsed = parseBookAddress(text);
    if (!parsed.ok) {
      throw new ValidationError('USDC_USAGE_SCREENING', `"${text.slice(0, 60)}" ${parsed.reason}`);
    }
    const hit = lists.lookup(parsed.value.address);
    return {
      address: parsed.value.address,
      listed: hit !== undefined,
      list: hit?.list ?? null,
      date: hit?.date ?? null,
    };
  });
  if (json) process.stdout.write(`${jsonText({ verdicts })}\n`);
  else {
    for (const v of verdicts) {
      process.stdout.write(`${v.address}: ${v.listed ? `LISTED on ${v.list} of ${v.date}` : 'not listed'}\n`);
    }
  }
  return verdicts.some((v) => v.listed) ? EXIT.rejected : EXIT.ok;
}
