import { HttpError } from './http-errors.ts';
import { MAX_JSON_STRING_LENGTH } from './json-body.ts';

/**
 * The most keys one JSON object of a request may have. The widest object of the API is a transfer
 * (its CSV columns, a handful); a body with an object of hundreds of thousands of keys is hostile.
 */
export const MAX_JSON_OBJECT_KEYS = 1000;
/** The deepest nesting of a request's JSON (the API's documents nest three levels). */
export const MAX_JSON_DEPTH = 64;
/** Characters scanned between two turns of the event loop: other requests are answered meanwhile. */
const SLICE = 64 * 1024;

/**
 * One linear pass over a JSON body before it is parsed, giving the event loop a turn every SLICE
 * characters: an object with more than MAX_JSON_OBJECT_KEYS keys, nesting deeper than
 * MAX_JSON_DEPTH, or a string longer than MAX_JSON_STRING_LENGTH is refused (400) as soon as it is
 * seen, before JSON.parse builds anything of it. Malformed JSON is left to the parser.
 */
export async function scanJsonBody(text: string): Promise<void> {
  const scan = startScan();
  for (let from = 0; from < text.length; from += SLICE) {
    scanSlice(scan, text, from, Math.min(text.length, from + SLICE));
    if (from + SLICE < text.length) await new Promise((r) => setImmediate(r));
  }
}

type Scan = {
  /** Per open container: the keys of an object so far, or -1 for an array. */
  readonly open: number[];
  inString: boolean;
  escaped: boolean;
  stringLength: number;
};

function startScan(): Scan {
  return { open: [], inString: false, escaped: false, stringLength: 0 };
}

function scanSlice(scan: Scan, text: string, from: number, to: number): void {
  const { open } = scan;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (scan.inString) {
      if (scan.escaped) scan.escaped = false;
      else if (c === 0x5c) scan.escaped = true;
      else if (c === 0x22) {
        scan.inString = false;
        continue;
      }
      if (++scan.stringLength > MAX_JSON_STRING_LENGTH)
        throw refused(
          'USDC_HTTP_STRING_TOO_LONG',
          `a JSON string is longer than ${MAX_JSON_STRING_LENGTH} characters`,
        );
      continue;
    }
    if (c === 0x22) {
      scan.inString = true;
      scan.stringLength = 0;
    } else if (c === 0x7b || c === 0x5b) {
      open.push(c === 0x7b ? 0 : -1);
      if (open.length > MAX_JSON_DEPTH)
        throw refused('USDC_HTTP_TOO_DEEP', `the body nests deeper than ${MAX_JSON_DEPTH} levels`);
    } else if (c === 0x7d || c === 0x5d) open.pop();
    else if (c === 0x3a && open.length > 0 && (open[open.length - 1] as number) >= 0) {
      const keys = (open[open.length - 1] as number) + 1;
      open[open.length - 1] = keys;
      if (keys > MAX_JSON_OBJECT_KEYS)
        throw refused(
          'USDC_HTTP_TOO_MANY_KEYS',
          `an object of the body has more than ${MAX_JSON_OBJECT_KEYS} keys; no object of a request may have more`,
        );
    }
  }
}

function refused(code: string, message: string): HttpError {
  return new HttpError(400, code, message);
}
