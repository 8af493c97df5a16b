import { anvilCall, anvilForward } from './anvil-rpc.ts';
import type { AnvilChainState } from './anvil-chain-state.ts';

type RpcRequest = { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown };
type RpcAnswer = { jsonrpc: '2.0'; id: unknown; result?: unknown; error?: { code: number; message: string } };

/** Methods that would let a caller rewrite the chain under the service: never forwarded. */
const REFUSED_PREFIXES = ['anvil_', 'evm_', 'hardhat_', 'debug_'];
const HEAD_TAGS = new Set(['latest', 'safe', 'finalized', 'pending']);
const BALANCE_OF = '0x70a08231';
/** Methods after which anvil may have mined blocks the block clock must note. */
const MINING = new Set(['eth_sendRawTransaction', 'eth_sendRawTransactionSync', 'eth_sendTransaction']);

/**
 * `/rpc/<CHAIN>`: anvil's JSON-RPC as a node `rpcNonceLagMs` behind the chain the service executes
 * on, consistently — `eth_blockNumber` is the newest block mined at least that long ago,
 * `eth_getBlockByNumber` knows blocks only up to it, `eth_call` reads state at it (an explicit
 * older block as of that block, a newer one is "header not found"); `safe` and `finalized` are its
 * head too (a local chain does not reorganise). Everything else is forwarded
 * as it is, except anvil's, evm_, hardhat_ and debug_ methods. A `balanceOf(address)` call meets
 * (funds once) the address first. A batch's calls that go to anvil go in one batch request, as a
 * provider's node takes them: one request each would cost the sandbox and anvil a round of HTTP per
 * call (a worker screening many recipients sends them as one batch).
 */
export async function handleLaggingRpc(
  s: AnvilChainState,
  body: unknown,
  hooks: { meet(address: string): Promise<void> },
): Promise<unknown> {
  if (!Array.isArray(body)) {
    const call = await prepare(s, body, hooks);
    return 'answer' in call ? call.answer : await forwardOne(s, call);
  }
  const calls = await Promise.all(body.map((b) => prepare(s, b, hooks)));
  const forwarded = calls.filter((c): c is Forward => 'forward' in c);
  const answers = forwarded.length > 0 ? await forwardBatch(s, forwarded) : [];
  let next = 0;
  return calls.map((c) => ('answer' in c ? c.answer : answers[next++]));
}

const errorAnswer = (id: unknown, code: number, message: string): RpcAnswer => ({
  jsonrpc: '2.0',
  id,
  error: { code, message },
});

/** A call answered here (refused, or a lagged head), or one to forward with its rewritten params. */
type Prepared = { readonly answer: RpcAnswer } | Forward;
type Forward = { readonly forward: RpcRequest; readonly id: unknown; readonly method: string };

async function prepare(
  s: AnvilChainState,
  raw: unknown,
  hooks: { meet(address: string): Promise<void> },
): Promise<Prepared> {
  const req = (typeof raw === 'object' && raw !== null ? raw : {}) as RpcRequest;
  const id = req.id ?? null;
  const fail = (code: number, message: string): Prepared => ({ answer: errorAnswer(id, code, message) });
  const ok = (result: unknown): Prepared => ({ answer: { jsonrpc: '2.0', id, result } });
  if (req.jsonrpc !== '2.0' || typeof req.method !== 'string') return fail(-32600, 'invalid request');
  const method = req.method;
  if (REFUSED_PREFIXES.some((p) => method.startsWith(p)))
    return fail(-32601, `method ${method.slice(0, 40)} is not available through the sandbox's RPC`);
  const params = Array.isArray(req.params) ? [...(req.params as unknown[])] : [];
  const lag = s.deps.config().rpcNonceLagMs;

  if (method === 'eth_call') await meetBalanceReader(s, params[0], hooks);
  if (lag === 0) finalAtOnce(method, params);
  else {
    const head = s.clock.headAt(lag, Date.now());
    if (method === 'eth_blockNumber') return ok(hex(head));
    if (method === 'eth_getBlockByNumber') {
      const at = blockAt(params[0], head);
      if (at === 'newer') return ok(null);
      if (at !== undefined) params[0] = hex(at);
    }
    if (method === 'eth_call') {
      const at = blockAt(params[1] ?? 'latest', head);
      if (at === 'newer') return fail(-32000, 'header not found');
      if (at !== undefined) params[1] = hex(at);
    }
  }
  return { forward: { ...req, params }, id, method };
}

async function forwardOne(s: AnvilChainState, call: Forward): Promise<RpcAnswer> {
  const answer = (await anvilForward(s.node.url, call.forward)) as RpcAnswer;
  if (MINING.has(call.method)) await noteMinedBlocks(s);
  return answer;
}

/**
 * The calls in one batch request to anvil, each under its place in the batch as its id (the
 * caller's ids need not be unique, or present); their answers in the calls' order, each under its
 * caller's id. A call anvil's answer leaves out is answered with an error.
 */
async function forwardBatch(s: AnvilChainState, calls: readonly Forward[]): Promise<RpcAnswer[]> {
  const reply = await anvilForward(
    s.node.url,
    calls.map((c, i) => ({ ...c.forward, id: i })),
  );
  const byPlace = new Map<unknown, RpcAnswer>();
  if (Array.isArray(reply)) for (const a of reply as RpcAnswer[]) byPlace.set(a.id, a);
  if (calls.some((c) => MINING.has(c.method))) await noteMinedBlocks(s);
  return calls.map((c, i) => {
    const a = byPlace.get(i);
    return a ? { ...a, id: c.id } : errorAnswer(c.id, -32603, 'no answer from the chain for this call');
  });
}

/**
 * A local chain has no reorgs: every block is final when mined, so `safe` and `finalized` name the
 * newest block (anvil itself would answer a block 64 below it, as if it had a beacon chain).
 */
function finalAtOnce(method: string, params: unknown[]): void {
  const at = method === 'eth_getBlockByNumber' ? 0 : method === 'eth_call' ? 1 : -1;
  if (at >= 0 && (params[at] === 'safe' || params[at] === 'finalized')) params[at] = 'latest';
}

/**
 * The block a tag or number names as seen `lag` behind: a head tag is the lagged head, a number
 * above it is 'newer'; undefined leaves the parameter as it is (`earliest`, a block hash).
 */
function blockAt(param: unknown, head: bigint): bigint | 'newer' | undefined {
  let tag = param;
  if (typeof tag === 'object' && tag !== null && 'blockNumber' in tag)
    tag = (tag as { blockNumber: unknown }).blockNumber;
  if (typeof tag !== 'string') return undefined;
  if (HEAD_TAGS.has(tag)) return head;
  if (!/^0x[0-9a-fA-F]+$/.test(tag)) return undefined;
  const n = BigInt(tag);
  return n > head ? 'newer' : n;
}

/** A `balanceOf(x)` read of the token is how `wallets` and `--dry-run` meet an owner: fund x first. */
async function meetBalanceReader(
  s: AnvilChainState,
  call: unknown,
  hooks: { meet(address: string): Promise<void> },
): Promise<void> {
  if (typeof call !== 'object' || call === null) return;
  const c = call as { to?: unknown; data?: unknown; input?: unknown };
  const data = typeof c.data === 'string' ? c.data : typeof c.input === 'string' ? c.input : '';
  if (typeof c.to !== 'string' || c.to.toLowerCase() !== s.usdc.toLowerCase()) return;
  if (data.slice(0, 10).toLowerCase() !== BALANCE_OF || !/^[0-9a-fA-F]{64}$/.test(data.slice(10, 74))) return;
  await hooks.meet(`0x${data.slice(34, 74)}`);
}

/** After a forwarded transaction, notes the blocks anvil mined for it (now). */
async function noteMinedBlocks(s: AnvilChainState): Promise<void> {
  const head = BigInt(await anvilCall<string>(s.node.url, 'eth_blockNumber'));
  s.clock.record(head, Date.now());
}

const hex = (n: bigint) => `0x${n.toString(16)}`;
