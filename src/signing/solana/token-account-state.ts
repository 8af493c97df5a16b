import { displayUrl } from '../../domain/url-display.ts';
import { ChainReadError, SIGNING_ERROR_CODES } from '../errors.ts';
import { postJsonRpc } from '../json-rpc.ts';

/**
 * A USDC token account as the chain shows it: `absent` (none yet: the first payment creates it),
 * `open` (initialized, not frozen) or `frozen` (its token's freeze authority froze it: nothing can be
 * paid into it).
 */
export type TokenAccountState = 'absent' | 'open' | 'frozen';

/** SPL Token's account layout: mint 32, owner 32, amount 8, delegate 4 + 32, then the state byte. */
const STATE_OFFSET = 108;
const STATE_INITIALIZED = 1;
const STATE_FROZEN = 2;

/**
 * `getAccountInfo` of one token account (`jsonParsed`; an answer in `base64` is read from the
 * account's bytes). Throws a ChainReadError when the node does not answer, or answers something that
 * is not a token account's state; messages name the URL's scheme, host and port only.
 */
export async function readTokenAccountState(
  url: string,
  account: string,
  options: { readonly fetch?: typeof fetch; readonly timeoutMs: number },
): Promise<TokenAccountState> {
  const fail = (message: string) =>
    new ChainReadError(SIGNING_ERROR_CODES.rpcFailed, `Solana RPC ${displayUrl(url)}: ${message}`);
  const body = await postJsonRpc(
    url,
    { method: 'getAccountInfo', params: [account, { encoding: 'jsonParsed', commitment: 'confirmed' }] },
    { ...(options.fetch ? { fetch: options.fetch } : {}), timeoutMs: options.timeoutMs, fail },
  );
  if (body.error !== undefined) {
    const message = typeof body.error?.message === 'string' ? body.error.message.slice(0, 200) : 'error';
    throw fail(`getAccountInfo refused: ${message}`);
  }
  const result = body.result as { value?: unknown } | undefined;
  if (typeof result !== 'object' || result === null || !('value' in result))
    throw fail('getAccountInfo answered no value');
  if (result.value === null) return 'absent';
  const state = stateOf((result.value as { data?: unknown }).data);
  if (state === undefined) throw fail(`getAccountInfo of ${account} does not show a token account's state`);
  return state;
}

/** The state from `data`: parsed (`parsed.info.state`) or `[base64, "base64"]` bytes. */
function stateOf(data: unknown): Exclude<TokenAccountState, 'absent'> | undefined {
  if (Array.isArray(data)) {
    if (data[1] !== 'base64' || typeof data[0] !== 'string') return undefined;
    const bytes = Buffer.from(data[0], 'base64');
    if (bytes.length <= STATE_OFFSET) return undefined;
    const byte = bytes[STATE_OFFSET];
    if (byte === STATE_FROZEN) return 'frozen';
    return byte === STATE_INITIALIZED ? 'open' : undefined;
  }
  const info = (data as { parsed?: { info?: { state?: unknown } } } | null)?.parsed?.info;
  if (info?.state === 'frozen') return 'frozen';
  return info?.state === 'initialized' ? 'open' : undefined;
}
