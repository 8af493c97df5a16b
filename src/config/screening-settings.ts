import type { Config } from './config.ts';
import { DEFAULTS } from './defaults.ts';
import type { EnvReader, Problem } from './env-reader.ts';

/*
 * SCREENING_LISTS, SCREENING_MAX_AGE and SCREENING_ONCHAIN (docs/screening.md). The lists' files are
 * read by the processes that screen (src/config/screening/screening-lists.ts), not here.
 */

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const AGE = /^([0-9]{1,6})([smhd])$/;

/** `30m`, `12h`, `7d`… as ms; undefined when not of that form or zero. */
export function parseMaxAge(text: string): number | undefined {
  const m = AGE.exec(text.trim().toLowerCase());
  const ms = m ? Number(m[1]) * (UNIT_MS[m[2] as string] as number) : 0;
  return ms > 0 ? ms : undefined;
}

export function readScreeningSettings(
  r: EnvReader,
  problem: Problem,
): Pick<Config, 'screeningLists' | 'screeningMaxAgeMs' | 'screeningOnchain'> {
  const ageText = r.str('SCREENING_MAX_AGE') ?? DEFAULTS.SCREENING_MAX_AGE;
  let maxAge = parseMaxAge(ageText);
  if (maxAge === undefined) {
    problem('SCREENING_MAX_AGE', 'must be a whole number of s, m, h or d above 0 (e.g. 7d, 36h)');
    maxAge = parseMaxAge(DEFAULTS.SCREENING_MAX_AGE) as number;
  }
  const onchain = (r.str('SCREENING_ONCHAIN') ?? DEFAULTS.SCREENING_ONCHAIN).toLowerCase();
  if (onchain !== 'on' && onchain !== 'off') problem('SCREENING_ONCHAIN', 'must be on or off');
  return {
    screeningLists: Object.freeze(r.list('SCREENING_LISTS') ?? []),
    screeningMaxAgeMs: maxAge,
    screeningOnchain: onchain !== 'off',
  };
}
