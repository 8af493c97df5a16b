import { address, isAddress } from '@solana/kit';
import { AccountState, getTokenDecoder, getTokenSize, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';
import { USDC_DECIMALS } from '../../domain/money.ts';
import type { LiteSvmState } from './litesvm-state.ts';

type Answer = { jsonrpc: '2.0'; id: unknown; result?: unknown; error?: { code: number; message: string } };

/**
 * `/rpc/SOLANA`: the few Solana JSON-RPC reads an operator's tools need from the sandbox's LiteSVM
 * (`getTokenAccountBalance` for `wallets` and `--dry-run`, `getAccountInfo` for the worker's
 * frozen-account check, `getBalance`, `getLatestBlockhash`, `getHealth`). A read meets no one: a token account does not name its wallet's key.
 */
export function handleSolanaRpc(s: LiteSvmState, body: unknown): unknown {
  if (Array.isArray(body)) return body.map((b) => one(s, b));
  return one(s, body);
}

function one(s: LiteSvmState, raw: unknown): Answer {
  const req = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const id = req['id'] ?? null;
  const ok = (result: unknown): Answer => ({ jsonrpc: '2.0', id, result });
  const fail = (code: number, message: string): Answer => ({ jsonrpc: '2.0', id, error: { code, message } });
  if (req['jsonrpc'] !== '2.0' || typeof req['method'] !== 'string') return fail(-32600, 'invalid request');
  const params = Array.isArray(req['params']) ? (req['params'] as unknown[]) : [];
  const context = { slot: Number(s.svm.getClock().slot) };
  const target = params[0];
  switch (req['method']) {
    case 'getHealth':
      return ok('ok');
    case 'getLatestBlockhash':
      return ok({
        context,
        value: { blockhash: s.svm.latestBlockhash(), lastValidBlockHeight: context.slot + 150 },
      });
    case 'getBalance':
      if (typeof target !== 'string' || !isAddress(target))
        return fail(-32602, 'Invalid param: not a base58 address');
      return ok({ context, value: Number(s.svm.getBalance(address(target)) ?? 0n) });
    case 'getTokenAccountBalance': {
      if (typeof target !== 'string' || !isAddress(target))
        return fail(-32602, 'Invalid param: not a base58 address');
      const account = s.svm.getAccount(address(target));
      if (!account.exists) return fail(-32602, 'Invalid param: could not find account');
      if (account.programAddress !== TOKEN_PROGRAM_ADDRESS || account.data.length !== getTokenSize())
        return fail(-32602, 'Invalid param: not a Token account');
      const token = getTokenDecoder().decode(account.data);
      const amount = token.amount.toString();
      const whole = amount.padStart(USDC_DECIMALS + 1, '0');
      const uiAmountString = `${whole.slice(0, -USDC_DECIMALS)}.${whole.slice(-USDC_DECIMALS)}`.replace(
        /\.?0+$/,
        '',
      );
      return ok({
        context,
        value: { amount, decimals: USDC_DECIMALS, uiAmount: Number(uiAmountString), uiAmountString },
      });
    }
    case 'getAccountInfo':
      if (typeof target !== 'string' || !isAddress(target))
        return fail(-32602, 'Invalid param: not a base58 address');
      return ok({ context, value: accountInfo(s, target, encodingOf(params[1])) });
    default:
      return fail(
        -32601,
        `method ${String(req['method']).slice(0, 40)} is not served by the sandbox's Solana RPC`,
      );
  }
}

/** The encoding a `getAccountInfo` asks for: `jsonParsed` or `base64` (the default here). */
function encodingOf(config: unknown): 'jsonParsed' | 'base64' {
  const e =
    typeof config === 'object' && config !== null ? (config as { encoding?: unknown }).encoding : undefined;
  return e === 'jsonParsed' ? 'jsonParsed' : 'base64';
}

/**
 * `getAccountInfo`'s value as a Solana node answers it: null for an account that does not exist;
 * a token account parsed (`jsonParsed`: `parsed.info.state` is `initialized` or `frozen`), anything
 * else as base64 bytes.
 */
function accountInfo(s: LiteSvmState, target: string, encoding: 'jsonParsed' | 'base64'): unknown {
  const account = s.svm.getAccount(address(target));
  if (!account.exists) return null;
  const base = {
    executable: account.executable,
    lamports: Number(account.lamports),
    owner: account.programAddress,
    rentEpoch: 0,
    space: account.data.length,
  };
  const isToken = account.programAddress === TOKEN_PROGRAM_ADDRESS && account.data.length === getTokenSize();
  if (encoding !== 'jsonParsed' || !isToken)
    return { ...base, data: [Buffer.from(account.data).toString('base64'), 'base64'] };
  const token = getTokenDecoder().decode(account.data);
  const state = token.state === AccountState.Frozen ? 'frozen' : 'initialized';
  const info = {
    isNative: false,
    mint: token.mint,
    owner: token.owner,
    state,
    tokenAmount: { amount: token.amount.toString(), decimals: USDC_DECIMALS },
  };
  return { ...base, data: { program: 'spl-token', parsed: { info, type: 'account' }, space: base.space } };
}
