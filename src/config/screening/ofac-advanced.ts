import { dayOf } from '../../domain/list-date.ts';
import { createAddressCollector, type ParsedList } from './list-addresses.ts';
import { walkXml } from './xml-walk.ts';

/*
 * OFAC's advanced file (`sdn_advanced.xml`): a party's digital currency address is the
 * `VersionDetail` of a `Feature` whose `FeatureTypeID` names a `FeatureType` of
 * `ReferenceValueSets/FeatureTypeValues` whose text starts "Digital Currency Address - " (one type
 * per asset: XBT, ETH, USDC, USDT, ARB, BSC, SOL…). Every asset counts. The file's date of issue is
 * the root's `DateOfIssue` (`Year`, `Month`, `Day`).
 */

const DIGITAL_CURRENCY = 'Digital Currency Address - ';

/** Reads an advanced file; throws naming what is missing or malformed. */
export async function parseOfacAdvanced(path: string): Promise<ParsedList> {
  const addresses = createAddressCollector();
  const digitalTypes = new Set<string>();
  // Details of features met before the reference sets (OFAC writes those first): kept until then.
  const pending = new Map<string, string[]>();
  let typesRead = false;
  let featureType: string | undefined;
  let typeId = '';
  const date: { Year?: number; Month?: number; Day?: number } = {};
  await walkXml(path, {
    open(name, attributes) {
      if (name === 'Feature') featureType = attributes['FeatureTypeID'];
      else if (name === 'FeatureType') typeId = attributes['ID'] ?? '';
    },
    close(name, text, parents) {
      if (name === 'FeatureType' && parents.at(-1) === 'FeatureTypeValues') {
        if (text.startsWith(DIGITAL_CURRENCY)) digitalTypes.add(typeId);
      } else if (name === 'VersionDetail' && featureType !== undefined && parents.includes('Feature')) {
        if (digitalTypes.has(featureType)) addresses.add(text);
        else if (!typesRead) keep(pending, featureType, text);
      } else if (name === 'FeatureTypeValues') {
        typesRead = true;
      } else if (name === 'Feature') {
        featureType = undefined;
      } else if (parents.length === 2 && parents[1] === 'DateOfIssue' && name in DATE_PARTS) {
        date[name as keyof typeof date] = Number(text);
      }
    },
  }).catch((err: unknown) => {
    throw new Error(`not well-formed XML: ${(err as Error).message}`);
  });
  for (const [type, details] of pending) if (digitalTypes.has(type)) details.forEach((d) => addresses.add(d));
  const issuedAt = dayOf(date.Year ?? NaN, date.Month ?? NaN, date.Day ?? NaN);
  if (issuedAt === undefined) throw new Error('no valid DateOfIssue (Year, Month, Day) in the file');
  return addresses.finish('ofac-advanced', issuedAt);
}

const DATE_PARTS = { Year: 1, Month: 1, Day: 1 };

function keep(pending: Map<string, string[]>, type: string, detail: string): void {
  const list = pending.get(type);
  if (list) list.push(detail);
  else pending.set(type, [detail]);
}
