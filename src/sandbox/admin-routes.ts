import type { IncomingMessage, ServerResponse } from 'node:http';
import { checkEvmAddress, checkSolanaAddress } from '../domain/addresses.ts';
import { isChain, isEvmChain } from '../domain/chains.ts';
import { tryParseUsdc } from '../domain/money.ts';
import { readBody, send } from './http-io.ts';
import type { SandboxAdmin } from './sandbox-admin.ts';
import type { SandboxConfigPatch } from './sandbox-config.ts';
import { err, type Reply, type ServiceState } from './service-state.ts';

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

export type AdminContext = {
  readonly state: ServiceState;
  readonly admin: SandboxAdmin;
  info(): unknown;
};

type Params = { body: Record<string, unknown>; query: URLSearchParams };

/**
 * `/__admin/*`, loopback clients only: config, ledger, requests, reset, info, nonces (bump-nonce,
 * the outside signer), intent-status forcing, on-chain balances and a balance for drills, native gas,
 * USDC's own controls (blacklist / unblacklist an EVM address, freeze / thaw a Solana USDC account).
 */
export async function handleAdmin(
  ctx: AdminContext,
  req: IncomingMessage,
  res: ServerResponse,
  method: string,
  url: URL,
): Promise<void> {
  const raw = (await readBody(req)) ?? '';
  if (!LOOPBACK.has(req.socket.remoteAddress ?? ''))
    return send(res, err(403, 'forbidden', 'admin is loopback only'));
  let body: Record<string, unknown> = {};
  if (raw.trim().length > 0) {
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return send(res, err(400, 'invalid_json', 'the body must be JSON'));
    }
  }
  try {
    const reply = await adminRoute(ctx, `${method} ${url.pathname}`, { body, query: url.searchParams });
    send(res, reply ?? err(404, 'not_found', 'no such admin route'));
  } catch (e) {
    send(res, err(400, 'invalid_request', e instanceof Error ? e.message : String(e)));
  }
}

const ok = (body: unknown): Reply => ({ status: 200, body });

async function adminRoute(ctx: AdminContext, route: string, p: Params): Promise<Reply | undefined> {
  const { admin, state } = ctx;
  switch (route) {
    case 'GET /__admin/config':
      return ok(admin.config());
    case 'POST /__admin/config':
      return ok(admin.configure(p.body as SandboxConfigPatch));
    case 'GET /__admin/ledger':
      return ok({ entries: state.ledger });
    case 'GET /__admin/requests':
      return ok({ requests: state.requestLog });
    case 'POST /__admin/reset':
      await admin.reset();
      return ok({ ok: true });
    case 'GET /__admin/info':
      return ok(ctx.info());
    case 'GET /__admin/nonce':
    case 'POST /__admin/bump-nonce':
    case 'POST /__admin/outside-permit':
      return await nonceRoute(admin, route, p);
    case 'POST /__admin/intent-status': {
      const id = p.body['intent_id'];
      const st = p.body['status'];
      if (typeof id !== 'string' || typeof st !== 'string')
        return err(400, 'invalid_request', 'intent_id and status are required');
      return admin.setIntentStatus(id, st)
        ? ok({ ok: true })
        : err(404, 'intent_not_found', 'no such intent');
    }
    case 'GET /__admin/balances': {
      const addresses = p.query.getAll('address');
      if (addresses.length === 0 || addresses.some((a) => !isAddress(a)))
        return err(400, 'invalid_request', 'address=<EVM or Solana address> (repeatable) is required');
      return ok({ balances: await admin.balances(addresses) });
    }
    case 'POST /__admin/balance':
      return await setBalanceRoute(admin, p.body);
    case 'GET /__admin/native-balance':
    case 'POST /__admin/native-balance':
      return await nativeBalanceRoute(admin, route, p);
    case 'POST /__admin/blacklist':
    case 'POST /__admin/unblacklist':
      return await blacklistRoute(admin, route.endsWith('/blacklist'), p.body);
    case 'POST /__admin/freeze':
    case 'POST /__admin/thaw':
      return await freezeRoute(admin, route.endsWith('/freeze'), p.body);
    default:
      return undefined;
  }
}

async function nonceRoute(admin: SandboxAdmin, route: string, p: Params): Promise<Reply> {
  const chain = String(p.body['chain'] ?? p.query.get('chain') ?? '').toUpperCase();
  const owner = String(p.body['owner'] ?? p.query.get('owner') ?? '');
  if (!isEvmChain(chain) || !checkEvmAddress(owner).ok)
    return err(400, 'invalid_request', 'chain (EVM) and owner (address) are required');
  const count = p.body[route.endsWith('bump-nonce') ? 'by' : 'count'] ?? 1;
  if (
    route.startsWith('POST') &&
    (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > 1000)
  )
    return err(400, 'invalid_request', 'by/count must be a whole number from 1 to 1000');
  if (route === 'POST /__admin/outside-permit') {
    const r = await admin.outsidePermit(chain, owner, count as number);
    return ok({ used: r.used.map(String), expected: r.expected.toString(), chain: r.chain.toString() });
  }
  const r =
    route === 'GET /__admin/nonce'
      ? await admin.nonce(chain, owner)
      : await admin.bumpNonce(chain, owner, count as number);
  return ok({ expected: r.expected.toString(), chain: r.chain.toString() });
}

async function setBalanceRoute(admin: SandboxAdmin, body: Record<string, unknown>): Promise<Reply> {
  const chain = String(body['chain'] ?? '').toUpperCase();
  const address = body['address'];
  const amount =
    typeof body['amount'] === 'string' ? tryParseUsdc(body['amount'], { allowZero: true }) : undefined;
  if (!isChain(chain) || typeof address !== 'string' || !amount?.ok)
    return err(400, 'invalid_request', 'chain, address and amount (decimal USDC string) are required');
  const valid = chain === 'SOLANA' ? checkSolanaAddress(address).ok : checkEvmAddress(address).ok;
  if (!valid) return err(400, 'invalid_request', `address is not a ${chain} address`);
  await admin.setBalance(chain, address, amount.value);
  return ok({ balances: await admin.balances([address]) });
}

/** An EVM address's native gas on a chain (`wei`, decimal string); POST sets it from `wei` first. */
async function nativeBalanceRoute(admin: SandboxAdmin, route: string, p: Params): Promise<Reply> {
  const chain = String(p.body['chain'] ?? p.query.get('chain') ?? '').toUpperCase();
  const address = String(p.body['address'] ?? p.query.get('address') ?? '');
  if (!isEvmChain(chain) || !checkEvmAddress(address).ok)
    return err(400, 'invalid_request', 'chain (EVM) and address (EVM) are required');
  if (route.startsWith('POST')) {
    const wei = p.body['wei'];
    if (typeof wei !== 'string' || !/^\d{1,40}$/.test(wei))
      return err(400, 'invalid_request', 'wei (a whole number as a decimal string) is required');
    await admin.setNativeBalance(chain, address, BigInt(wei));
  }
  return ok({ chain, address, wei: (await admin.nativeBalance(chain, address)).toString() });
}

/** `{ chain, address }`: USDC's blacklister blacklists (or unblacklists) the address on that EVM chain. */
async function blacklistRoute(
  admin: SandboxAdmin,
  on: boolean,
  body: Record<string, unknown>,
): Promise<Reply> {
  const chain = String(body['chain'] ?? '').toUpperCase();
  const address = typeof body['address'] === 'string' ? checkEvmAddress(body['address']) : undefined;
  if (!isEvmChain(chain) || !address?.ok)
    return err(400, 'invalid_request', 'chain (EVM) and address (EVM address) are required');
  await admin.setBlacklisted(chain, address.value, on);
  return ok({ chain, address: address.value, blacklisted: on });
}

/** `{ address }`: a Solana wallet whose USDC associated token account is frozen (or thawed). */
async function freezeRoute(admin: SandboxAdmin, on: boolean, body: Record<string, unknown>): Promise<Reply> {
  const owner = body['address'];
  if (typeof owner !== 'string' || !checkSolanaAddress(owner).ok)
    return err(400, 'invalid_request', 'address (a Solana wallet address) is required');
  const account = await admin.setFrozen(owner, on);
  return ok({ address: owner, usdc_account: account, frozen: on });
}

const isAddress = (a: string) => checkEvmAddress(a).ok || checkSolanaAddress(a).ok;
