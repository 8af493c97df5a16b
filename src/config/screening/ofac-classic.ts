import { dayOf } from '../../domain/list-date.ts';
import { createAddressCollector, type ParsedList } from './list-addresses.ts';
import { walkXml } from './xml-walk.ts';

/*
 * OFAC's classic file (`sdn.xml`): a party's digital currency address is an `sdnEntry/idList/id`
 * whose `idType` starts "Digital Currency Address - " (any asset), its `idNumber` the address. The
 * file's date of issue is `publshInformation/Publish_Date` (OFAC's spelling), `MM/DD/YYYY`.
 */

const DIGITAL_CURRENCY = 'Digital Currency Address - ';
const US_DATE = /^([0-9]{1,2})\/([0-9]{1,2})\/([0-9]{4})$/;

/** Reads a classic file; throws naming what is missing or malformed. */
export async function parseOfacClassic(path: string): Promise<ParsedList> {
  const addresses = createAddressCollector();
  let idType = '';
  let idNumber = '';
  let published: string | undefined;
  await walkXml(path, {
    open(name) {
      if (name === 'id') idType = idNumber = '';
    },
    close(name, text, parents) {
      const parent = parents.at(-1);
      if (parent === 'id' && name === 'idType') idType = text;
      else if (parent === 'id' && name === 'idNumber') idNumber = text;
      else if (name === 'id' && parent === 'idList' && idType.startsWith(DIGITAL_CURRENCY))
        addresses.add(idNumber);
      else if (name === 'Publish_Date' && parent === 'publshInformation') published = text;
    },
  }).catch((err: unknown) => {
    throw new Error(`not well-formed XML: ${(err as Error).message}`);
  });
  const m = US_DATE.exec(published ?? '');
  const issuedAt = m ? dayOf(Number(m[3]), Number(m[1]), Number(m[2])) : undefined;
  if (issuedAt === undefined) {
    throw new Error(
      published === undefined
        ? 'no publshInformation/Publish_Date in the file'
        : `Publish_Date "${published.slice(0, 20)}" is not MM/DD/YYYY`,
    );
  }
  return addresses.finish('ofac-classic', issuedAt);
}
