import { ValidationError } from '../domain/errors.ts';
import { isTransferRoad, TRANSFER_ROADS, type TransferRoad } from '../domain/roads.ts';

/*
 * Command-line options as Commander hands them over (`command.opts()`, an object of unknown values),
 * parsed once at the edge into a typed object: each command names the options it takes and their
 * kinds, and a value of another kind is a usage error (exit 2) naming the option, never a cast.
 */

/** What an option holds: a switch, one value, or a repeatable value. */
export type OptionKind = 'flag' | 'text' | 'texts';

/** The value each kind parses to: a switch is false when absent; a value undefined. */
type ValueOf<K extends OptionKind> = K extends 'flag'
  ? boolean
  : K extends 'text'
    ? string | undefined
    : string[];

export type Options<S extends Record<string, OptionKind>> = { readonly [N in keyof S]: ValueOf<S[N]> };

/** `--batch-id` for `batchId`: how the option is typed on the command line. */
function optionName(key: string): string {
  return `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

function parseOne(key: string, kind: OptionKind, value: unknown): boolean | string | string[] | undefined {
  if (kind === 'flag') {
    if (value === undefined || typeof value === 'boolean') return value === true;
  } else if (kind === 'text') {
    if (value === undefined || typeof value === 'string') return value;
  } else if (value === undefined) {
    return [];
  } else if (Array.isArray(value) && value.every((v) => typeof v === 'string')) {
    return value as string[];
  }
  throw new ValidationError(
    'USDC_USAGE_OPTION',
    `${optionName(key)}: expected ${kind === 'flag' ? 'no value' : kind === 'text' ? 'one value' : 'values'}, got ${Array.isArray(value) ? 'a list' : typeof value}`,
  );
}

/** `--via`'s value: one of the roads (a usage error naming the option otherwise); undefined when absent. */
export function roadOption(text: string | undefined): TransferRoad | undefined {
  if (text === undefined || isTransferRoad(text)) return text;
  throw new ValidationError(
    'USDC_USAGE_VIA',
    `--via must be one of ${TRANSFER_ROADS.join(', ')}, not "${text.slice(0, 40)}"`,
  );
}

/**
 * The options `spec` names, parsed from what the command line gave; an option the spec does not
 * name is a usage error too (Commander rejects unknown options first; this guards the spec).
 */
export function parseOptions<S extends Record<string, OptionKind>>(
  spec: S,
  given: Readonly<Record<string, unknown>>,
): Options<S> {
  for (const key of Object.keys(given)) {
    if (!(key in spec))
      throw new ValidationError('USDC_USAGE_OPTION', `${optionName(key)}: not an option of this command`);
  }
  const out: Record<string, unknown> = {};
  for (const [key, kind] of Object.entries(spec)) out[key] = parseOne(key, kind, given[key]);
  return out as Options<S>;
}
