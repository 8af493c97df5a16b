import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeBase58 } from '../../src/domain/base58.ts';
import type { BatchStatus } from '../../src/present/batch-status.ts';
import type { TransferView } from '../../src/present/transfer-view.ts';
import type { LedgerEntry } from '../../src/sandbox/sandbox.ts';
import { ATTR, SPAN } from '../../src/trace/attributes.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../../support/otlp-receiver.ts';
import { runCli, waitFor, type SpawnedProcess } from '../helpers/cli.ts';
import { startStack, type Stack } from '../helpers/e2e.ts';
import { csvOf, randomEvmAddress, randomSolanaAddress } from '../helpers/fixtures.ts';
import { TEST_EVM_KEY } from '../helpers/sandbox.ts';
import { startServe, type ServeProcess } from '../helpers/serve.ts';

/*
 * docs/traces.md: with an OTLP endpoint set, `serve`, `enqueue` and `worker` export OpenTelemetry
 * traces — one per transfer, from the request or command that enqueued it (a link) through its job's
 * runs and steps to each service and RPC call, and the polls of its intent. Here the real processes
 * export OTLP/JSON to a local receiver, which keeps every byte they sent: the span trees and
 * attributes are read from it, and every secret the test knows is searched for in all of it. The
 * RPC endpoints carry provider keys in their path, query and user part (a proxy in front of the
 * sandbox's RPC takes them). Then a worker and an enqueue with tracing off load nothing of
 * OpenTelemetry but its API.
 */

const HOOK = 'hook-token-traces-0123456789abcdef';
const PATH_KEY = 'pathKEYtr4c3s0001';
const QUERY_KEY = 'queryKEYtr4c3s0002';
const USER_KEY = 'userKEYtr4c3s0003';
const PASS_KEY = 'passKEYtr4c3s0004';
const POLY_KEY = 'polyKEYtr4c3s0005';
const CALLBACK_KEY = 'cbKEYtr4c3s0006';

const KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;
const ERROR = 2;
const RECORDER = pathToFileURL(join(import.meta.dirname, '../helpers/record-modules.ts')).href;

/**
 * The sandbox's RPC behind provider-style URLs: `/base/<key>/`, `/arb?apikey=<key>`, Basic auth
 * for ETH, `/v2/<key>` for POLYGON — each forwarded to the sandbox's `/rpc/<CHAIN>`. It also takes
 * the batch's completion callback (200).
 */
async function keyedRpcProxy(sandboxUrl: string): Promise<{ base: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = req.url ?? '';
      const chain = url.startsWith(`/base/${PATH_KEY}`)
        ? 'BASE'
        : url.startsWith(`/arb?apikey=${QUERY_KEY}`)
          ? 'ARB'
          : url.startsWith(`/v2/${POLY_KEY}`)
            ? 'POLYGON'
            : req.headers.authorization ===
                `Basic ${Buffer.from(`${USER_KEY}:${PASS_KEY}`).toString('base64')}`
              ? 'ETH'
              : undefined;
      if (!chain) {
        res.writeHead(url.startsWith('/callback') ? 200 : 404).end();
        return;
      }
      fetch(`${sandboxUrl}/rpc/${chain}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: Buffer.concat(chunks),
      }).then(
        async (r) => res.writeHead(r.status, { 'content-type': 'application/json' }).end(await r.text()),
        () => res.writeHead(502).end(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('traces: from the request to the chain', () => {
  let stack: Stack;
  let receiver: OtlpReceiver;
  let proxy: Awaited<ReturnType<typeof keyedRpcProxy>>;
  let serve: ServeProcess;
  let worker: SpawnedProcess;
  let otel: Record<string, string>;
  let apiDoc: BatchStatus;
  let cliDoc: BatchStatus;
  let cctpDoc: BatchStatus;
  let cliStderr: string;
  let workerOutput: string;
  let page: string;
  let spans: ReceivedSpan[];
  let ledger: readonly LedgerEntry[];
  const apiRows = [
    { id: 'evm', from: 'BASE', to: 'ARB', amount: '10.00', recipient: randomEvmAddress() },
    { id: 'query', from: 'ARB', to: 'BASE', amount: '11.00', recipient: randomEvmAddress() },
    { id: 'poly', from: 'POLYGON', to: 'BASE', amount: '12.00', recipient: randomEvmAddress() },
    { id: 'sol', from: 'SOLANA', to: 'BASE', amount: '13.00', recipient: randomEvmAddress() },
    // Below the service's fee: the estimate is refused, the transfer ends failed.
    { id: 'tiny', from: 'SOLANA', to: 'ARB', amount: '0.01', recipient: randomEvmAddress() },
  ];

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    stack = await startStack();
    proxy = await keyedRpcProxy(stack.sandbox.url);
    otel = {
      ...stack.env,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_TRACES_SAMPLER: 'always_on',
      HOOK_TOKEN: HOOK,
      EVM_RPC_URL_BASE: `http://${proxy.base}/base/${PATH_KEY}/`,
      EVM_RPC_URL_ARB: `http://${proxy.base}/arb?apikey=${QUERY_KEY}`,
      EVM_RPC_URL_ETH: `http://${USER_KEY}:${PASS_KEY}@${proxy.base}/`,
      EVM_RPC_URL_POLYGON: `http://${proxy.base}/v2/${POLY_KEY}`,
      CALLBACK_ALLOWED_HOSTS: proxy.base,
      CCTP_API_URL: stack.sandbox.cctp.api_url,
    };
    serve = await startServe(otel);
    worker = stack.startWorker(otel);

    // The command line's enqueue, traced (and its modules recorded: the positive control below).
    const file = join(stack.dir, 'cli-traced.csv');
    writeFileSync(
      file,
      // Paid to an address of its own: were it the stack's Solana wallet, and its intent minted before
      // that wallet's first build-tx, the sandbox would count the wallet met (funded) with these 9 USDC
      // alone, and the 13 USDC SOLANA row below would be refused for insufficient funds.
      csvOf([{ id: 'cli', from: 'ETH', to: 'SOLANA', amount: '9.00', recipient: randomSolanaAddress() }]),
    );
    const cli = await runCli(['enqueue', file, '--json', '--batch-id', 'traces-cli'], {
      ...otel,
      NODE_OPTIONS: `--import=${RECORDER}`,
      USDC_MODULE_RECORD: join(stack.dir, 'modules-enqueue-on.txt'),
    });
    expect(cli.code, cli.stderr).toBe(0);
    cliStderr = cli.stderr;
    // One row on the CCTP road: its burn's steps in its run, its attestation and mint as steps too.
    const cctpFile = join(stack.dir, 'cctp-traced.csv');
    writeFileSync(
      cctpFile,
      csvOf([{ id: 'cctp', from: 'BASE', to: 'ETH', amount: '7.00', recipient: randomEvmAddress() }]),
    );
    const cctp = await runCli(
      ['enqueue', cctpFile, '--json', '--batch-id', 'traces-cctp', '--via', 'cctp-fast'],
      otel,
    );
    expect(cctp.code, cctp.stderr).toBe(0);
    // The API's POST, its rows on every kind of keyed RPC, with a callback whose URL carries a key.
    const res = await serve.call('/v1/batches', {
      method: 'POST',
      token: HOOK,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        batch_id: 'traces-api',
        callback_url: `http://${proxy.base}/callback/${CALLBACK_KEY}?token=${CALLBACK_KEY}`,
        transfers: apiRows,
      }),
    });
    expect(res.status, await res.clone().text()).toBe(202);
    // Settled: every submitted intent followed to its final status (first poll 15 s after submit).
    const settled = async (batchId: string) =>
      await waitFor(
        `${batchId} to settle`,
        async () => {
          const d = await stack.status(batchId);
          return d.complete && d.settled === true ? d : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 500 },
      );
    apiDoc = await settled('traces-api');
    cliDoc = await settled('traces-cli');
    cctpDoc = await settled('traces-cctp');
    ledger = await stack.ledger();
    page = await (await serve.call('/ui/batches/traces-api', { token: HOOK })).text();
    // Stopping flushes what each process still holds.
    await worker.stop(15_000);
    await serve.stop();
    workerOutput = worker.output();
    spans = receiver.spans();
  }, 240_000);

  afterAll(async () => {
    await serve?.stop();
    await worker?.stop(10_000);
    await proxy?.close();
    await stack?.stop();
    await receiver?.close();
  });

  const transfer = (doc: BatchStatus, id: string) => doc.transfers.find((t) => t.id === id) as TransferView;
  const traceOf = (t: TransferView) => spans.filter((s) => s.traceId === t.trace_id);
  const byId = (traceId: string, spanId: string) =>
    spans.find((s) => s.traceId === traceId && s.spanId === spanId);
  const childrenOf = (parent: ReceivedSpan, name?: string) =>
    spans
      .filter((s) => s.traceId === parent.traceId && s.parentSpanId === parent.spanId)
      .filter((s) => name === undefined || s.name === name)
      .sort((a, b) => (a.startNs < b.startNs ? -1 : a.startNs > b.startNs ? 1 : 0));
  const one = (list: ReceivedSpan[], what: string) => {
    expect(list, what).toHaveLength(1);
    return list[0] as ReceivedSpan;
  };
  const serviceOrigin = () => stack.sandbox.url;

  /** The transfer's root: a trace of its own, linked to the producer span that added its job. */
  function rootOf(t: TransferView): { root: ReceivedSpan; producer: ReceivedSpan } {
    expect(t.trace_id, t.id).toMatch(/^[0-9a-f]{32}$/);
    const root = one(
      traceOf(t).filter((s) => s.name === SPAN.transfer),
      `${t.id}'s root`,
    );
    expect(root.parentSpanId).toBe('');
    const link = root.links[0];
    expect(link, `${t.id}'s root links to what enqueued it`).toBeDefined();
    const producer = byId(link?.traceId ?? '', link?.spanId ?? '') as ReceivedSpan;
    expect(producer, 'the linked producer span was exported').toBeDefined();
    expect(producer.kind).toBe(KIND.producer);
    expect(producer.name).toBe(`addBulk transfers-${t.from}`);
    return { root, producer };
  }

  /** The steps of the transfer's (one) run, in order, each with its HTTP client spans. */
  /** A run and its steps (a call made while no step was open is the run's own child, not a step). */
  function stepsOf(root: ReceivedSpan): { run: ReceivedSpan; steps: ReceivedSpan[] } {
    const run = one(childrenOf(root, SPAN.run), 'one run');
    expect(run.kind).toBe(KIND.consumer);
    return { run, steps: childrenOf(run).filter((s) => s.kind !== KIND.client) };
  }

  function expectTransferAttributes(s: ReceivedSpan, t: TransferView, batchId: string): void {
    expect(s.attributes, s.name).toMatchObject({
      [ATTR.batchId]: batchId,
      [ATTR.transferId]: t.id,
      [ATTR.chain]: t.from,
      [ATTR.to]: t.to,
    });
    expect(typeof s.attributes[ATTR.state], `${s.name} has a state`).toBe('string');
  }

  /** The step's HTTP client calls, each named by its origin only. */
  function callsOf(step: ReceivedSpan): ReceivedSpan[] {
    const calls = childrenOf(step).filter((s) => s.kind === KIND.client);
    for (const c of calls) expect(c.attributes['url.full'], c.name).toMatch(/^http:\/\/127\.0\.0\.1:[0-9]+$/);
    return calls;
  }

  it('gives each transfer its trace id in the status document and the batch page', async () => {
    for (const t of [...apiDoc.transfers, ...cliDoc.transfers]) {
      expect(t.trace_id, t.id).toMatch(/^[0-9a-f]{32}$/);
      expect(traceOf(t).length, `${t.id}'s trace was exported`).toBeGreaterThan(0);
    }
    expect(new Set(apiDoc.transfers.map((t) => t.trace_id)).size, 'one trace per transfer').toBe(
      apiRows.length,
    );
    for (const t of apiDoc.transfers)
      expect(page, `the page shows ${t.id}'s trace`).toMatch(new RegExp(`data-trace-id\\s*>${t.trace_id}<`));
  });

  it('follows an EVM transfer from POST /v1/batches through its job to estimate, guard, sign, send and follow', () => {
    const t = transfer(apiDoc, 'evm');
    expect(t.state, JSON.stringify(t.error)).toBe('submitted');
    const { root, producer } = rootOf(t);
    // The producer span is a child of the request that enqueued the batch, in the API's trace.
    const request = byId(producer.traceId, producer.parentSpanId) as ReceivedSpan;
    expect(request).toMatchObject({ service: 'usdc-batch-api', name: 'POST /v1/batches', kind: KIND.server });
    expect(request.attributes).toMatchObject({
      'http.route': '/v1/batches',
      [ATTR.batchId]: 'traces-api',
      [ATTR.transfers]: 5,
    });
    expect(root.service).toBe('usdc-batch-worker');
    const { run, steps } = stepsOf(root);
    expect(steps.map((s) => s.name)).toEqual([
      'usdc_batch.estimate',
      'usdc_batch.guard',
      'usdc_batch.sign',
      'usdc_batch.send',
    ]);
    for (const s of [root, run, ...steps]) expectTransferAttributes(s, t, 'traces-api');
    expect(run.attributes).toMatchObject({
      [ATTR.state]: 'submitted',
      [ATTR.intentId]: t.intent_id,
      [ATTR.firstRun]: true,
    });
    const [estimate, guard, sign, send] = steps as [ReceivedSpan, ReceivedSpan, ReceivedSpan, ReceivedSpan];
    // The service's calls and the RPC's, each a client span of the step open when it was made. USDC's
    // own controls (the recipient's, the owner's) are read on chain beside the estimate: the RPC only.
    const estimateCalls = callsOf(estimate).map((c) => c.attributes['url.full']);
    expect(estimateCalls.filter((u) => u === serviceOrigin())).toHaveLength(1);
    for (const u of estimateCalls) expect([serviceOrigin(), `http://${proxy.base}`]).toContain(u);
    for (const c of callsOf(guard)) expect(c.attributes['url.full'], c.name).toBe(`http://${proxy.base}`);
    // Its owner's nonce, balance and USDC's domain were read as the worker started: any RPC call left
    // here is a refresh of the balance, named by its origin.
    for (const c of callsOf(sign)) expect(c.attributes['url.full'], c.name).toBe(`http://${proxy.base}`);
    expect(callsOf(send).map((c) => [c.name, c.attributes['url.full']])).toEqual([['POST', serviceOrigin()]]);
    expect(send.attributes).toMatchObject({
      [ATTR.intentId]: t.intent_id,
      [ATTR.answer]: 'accepted',
      [ATTR.sendNumber]: 1,
      [ATTR.resend]: false,
    });
    // The job log's lines are the steps' events.
    expect(send.events.map((e) => String(e.attributes[ATTR.message]))).toEqual([
      expect.stringMatching(/^POST \/sdk\/v1\/transfer \(permit nonce [0-9]+\): send 1 of a new payload/),
      expect.stringMatching(/^accepted: intent /),
    ]);
    // Its intent's polls: children of the root, each with its GET of the status route.
    const follows = childrenOf(root, SPAN.follow);
    expect(follows.length).toBeGreaterThan(0);
    for (const f of follows) {
      expectTransferAttributes(f, t, 'traces-api');
      expect(f.attributes[ATTR.intentId]).toBe(t.intent_id);
      expect(callsOf(f).map((c) => c.name)).toEqual(['GET']);
    }
    expect(follows.at(-1)?.attributes[ATTR.intentStatus]).toBe('complete');
  });

  it('follows a SOLANA transfer through estimate, guard, build, verify, sign, submit and follow', () => {
    const t = transfer(apiDoc, 'sol');
    expect(t.state, JSON.stringify(t.error)).toBe('submitted');
    const { root } = rootOf(t);
    const { run, steps } = stepsOf(root);
    expect(steps.map((s) => s.name)).toEqual([
      'usdc_batch.estimate',
      'usdc_batch.guard',
      'usdc_batch.build',
      'usdc_batch.verify',
      'usdc_batch.sign',
      'usdc_batch.submit',
    ]);
    for (const s of [root, run, ...steps]) expectTransferAttributes(s, t, 'traces-api');
    const [estimate, , build, verify, sign, submit] = steps as ReceivedSpan[];
    // The estimate's call, and beside it the on-chain read of the recipient's controls (the RPC's).
    const estimateCalls = callsOf(estimate as ReceivedSpan).map((c) => c.attributes['url.full']);
    expect(estimateCalls.filter((u) => u === serviceOrigin())).toHaveLength(1);
    for (const u of estimateCalls) expect([serviceOrigin(), `http://${proxy.base}`]).toContain(u);
    expect(callsOf(build as ReceivedSpan).map((c) => c.attributes['url.full'])).toEqual([serviceOrigin()]);
    // The check and the signature are the worker's own: no call.
    expect(callsOf(verify as ReceivedSpan)).toEqual([]);
    expect(callsOf(sign as ReceivedSpan)).toEqual([]);
    expect(callsOf(submit as ReceivedSpan)).toHaveLength(1);
    expect(submit?.attributes).toMatchObject({ [ATTR.intentId]: t.intent_id, [ATTR.answer]: 'accepted' });
    expect(run.attributes).toMatchObject({ [ATTR.state]: 'submitted', [ATTR.intentId]: t.intent_id });
    expect(childrenOf(root, SPAN.follow).length).toBeGreaterThan(0);
  });

  it('follows a CCTP transfer through estimate, guard, approve, burn, then attest and mint (no follow spans)', () => {
    const t = transfer(cctpDoc, 'cctp');
    expect(t).toMatchObject({ state: 'submitted', intent_status: 'complete' });
    const { root } = rootOf(t);
    const runs = childrenOf(root, SPAN.run);
    expect(runs.length).toBeGreaterThan(0);
    const burnSteps = runs.flatMap((r) => childrenOf(r).map((s) => s.name));
    for (const step of ['estimate', 'guard', 'approve', 'burn'])
      expect(burnSteps, step).toContain(`usdc_batch.${step}`);
    // The burn's transactions go through BASE's RPC, whose key is in the path: named by its origin.
    const burns = runs.flatMap((r) => childrenOf(r, 'usdc_batch.burn'));
    expect(burns.flatMap((b) => callsOf(b)).map((c) => c.attributes['url.full'])).toContain(
      `http://${proxy.base}`,
    );
    expect(childrenOf(root, SPAN.follow)).toEqual([]);
    const attests = childrenOf(root, 'usdc_batch.attest');
    const mints = childrenOf(root, 'usdc_batch.mint');
    expect(attests.length).toBeGreaterThan(0);
    expect(mints.length).toBeGreaterThan(0);
    for (const s of [...attests, ...mints]) {
      expect(s.attributes).toMatchObject({
        [ATTR.intentId]: t.intent_id,
        [ATTR.chain]: 'BASE',
        [ATTR.to]: 'ETH',
      });
      expect(s.events.length, `${s.name} has its lines`).toBeGreaterThan(0);
    }
    // Attested before minted, and the last mint saw the intent complete.
    expect(attests[0]!.startNs <= mints[0]!.startNs).toBe(true);
    expect(mints.at(-1)?.attributes[ATTR.intentStatus]).toBe('complete');
  });

  it("links the command line's enqueue (usdc-batch-cli) to its transfer's trace", () => {
    const t = transfer(cliDoc, 'cli');
    const { producer } = rootOf(t);
    const command = byId(producer.traceId, producer.parentSpanId) as ReceivedSpan;
    expect(command).toMatchObject({ service: 'usdc-batch-cli', name: SPAN.enqueue, parentSpanId: '' });
    expect(command.attributes).toMatchObject({ [ATTR.batchId]: 'traces-cli', [ATTR.transfers]: 1 });
    const { steps } = stepsOf(rootOf(t).root);
    expect(steps.map((s) => s.name)).toEqual([
      'usdc_batch.estimate',
      'usdc_batch.guard',
      'usdc_batch.sign',
      'usdc_batch.send',
    ]);
    expect(cliStderr).not.toContain(PASS_KEY);
  });

  it('fails the step a transfer failed in, with its error code; the log line it wrote names the span', () => {
    const t = transfer(apiDoc, 'tiny');
    expect(t.state).toBe('failed');
    expect(t.error?.code).toBe('estimate_refused');
    const { root } = rootOf(t);
    const { run, steps } = stepsOf(root);
    expect(steps.map((s) => s.name)).toEqual(['usdc_batch.estimate']);
    const estimate = steps[0] as ReceivedSpan;
    for (const s of [estimate, run]) {
      expect(s.status.code, s.name).toBe(ERROR);
      expect(s.attributes).toMatchObject({ [ATTR.errorCode]: 'estimate_refused', [ATTR.state]: 'failed' });
    }
    // Its refused call is an HTTP client span too, in error (HTTP 400).
    const service = callsOf(estimate).filter((c) => c.attributes['url.full'] === serviceOrigin());
    expect(service.map((c) => c.attributes['http.response.status_code'])).toEqual([400]);
    // The worker's warn line about it (README: every failed transfer at warn) carries its trace.
    const line = workerOutput
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l['transferId'] === 'tiny' && l['level'] === 40 && l['state'] === 'failed');
    expect(line, workerOutput.slice(-2000)).toMatchObject({ trace_id: t.trace_id, span_id: estimate.spanId });
  });

  it('exports no key, token, API key, permit signature or signed payload, and URLs as scheme, host and port', () => {
    const sent = receiver.bodies().join('\n');
    expect(sent.length).toBeGreaterThan(0);
    const solanaKey = JSON.parse(
      readFileSync(stack.env['SOLANA_KEYPAIR_FILE'] as string, 'utf8'),
    ) as number[];
    const solanaSeed = Uint8Array.from(solanaKey.slice(0, 32));
    const secrets: Record<string, string> = {
      EVM_PRIVATE_KEY: TEST_EVM_KEY.replace(/^0x/, ''),
      'the Solana key (base58)': encodeBase58(Uint8Array.from(solanaKey)),
      'the Solana seed (hex)': Buffer.from(solanaSeed).toString('hex'),
      'the Solana seed (base64)': Buffer.from(solanaSeed).toString('base64'),
      'the Solana key file': JSON.stringify(solanaKey.slice(0, 8)).slice(1, -1),
      HOOK_TOKEN: HOOK,
      TRANSFER_API_KEY: stack.env['TRANSFER_API_KEY'] as string,
      'an RPC key in the path': PATH_KEY,
      'an RPC key in the query': QUERY_KEY,
      'an RPC user': USER_KEY,
      'an RPC password': PASS_KEY,
      'a second RPC key in the path': POLY_KEY,
      'a callback key': CALLBACK_KEY,
      'Basic credentials': Buffer.from(`${USER_KEY}:${PASS_KEY}`).toString('base64'),
    };
    // What the worker signed, as the service received it: permit signatures and signed transactions.
    expect(ledger.length).toBe(5);
    for (const [i, e] of ledger.entries()) {
      const payload = e.signed_payload.replace(/^0x/, '');
      expect(payload.length, `${e.kind} payload`).toBeGreaterThan(100);
      secrets[`signed payload ${i} (${e.kind})`] = payload;
      secrets[`a part of signed payload ${i}`] = payload.slice(40, 100);
    }
    for (const [what, secret] of Object.entries(secrets)) {
      expect(secret.length, what).toBeGreaterThan(8);
      expect(sent.toLowerCase().includes(secret.toLowerCase()), `the export holds ${what}`).toBe(false);
    }
    // Every URL attribute is an origin; no path, query or header attribute is exported.
    for (const s of spans) {
      for (const [key, value] of Object.entries(s.attributes)) {
        if (key === 'url.full' || key === 'http.url')
          expect(value, `${s.name} ${key}`).toMatch(/^https?:\/\/[^/?#@]+$/);
        expect(key, s.name).not.toMatch(
          /^(url\.path|url\.query|http\.target)$|^http\.(request|response)\.header\./,
        );
      }
    }
    // The Solana transfer's signature is public on chain and may be there; the status says which.
    expect(transfer(apiDoc, 'sol').tx_signature).toBeTruthy();
  });

  it('with tracing off, a worker and an enqueue load no OpenTelemetry SDK, exporter or instrumentation', async () => {
    const record = (name: string) => join(stack.dir, `modules-${name}.txt`);
    const recorded = (name: string) => readFileSync(record(name), 'utf8').split('\n');
    const off = { ...stack.env, NODE_OPTIONS: `--import=${RECORDER}` };
    const quiet = stack.startWorker({ ...off, USDC_MODULE_RECORD: record('worker-off') });
    const file = join(stack.dir, 'off.csv');
    writeFileSync(file, csvOf([
      { id: 'off-evm', from: 'BASE', to: 'ARB', amount: '3.00', recipient: randomEvmAddress() },
      { id: 'off-sol', from: 'SOLANA', to: 'BASE', amount: '4.00', recipient: randomEvmAddress() },
    ])); // prettier-ignore
    const enq = await runCli(['enqueue', file, '--json', '--batch-id', 'traces-off'], {
      ...off,
      USDC_MODULE_RECORD: record('enqueue-off'),
    });
    expect(enq.code, enq.stderr).toBe(0);
    const doc = await stack.waitComplete('traces-off');
    expect(doc.transfers.map((t) => [t.state, t.trace_id])).toEqual([
      ['submitted', null],
      ['submitted', null],
    ]);
    await quiet.stop(15_000);
    const otelOnly = (urls: string[]) =>
      urls.filter(
        (u) =>
          /\/node_modules\/(@opentelemetry\/(?!api\/)|bullmq-otel\/|import-in-the-middle\/|require-in-the-middle\/)/.test(
            u,
          ) || /\/src\/(trace\/start-tracing|trace\/span-scrubber|queue\/run-spans)\.ts$/.test(u),
      );
    for (const name of ['worker-off', 'enqueue-off']) {
      const urls = recorded(name);
      // The recorder saw the process's own modules (a real list, not an empty file).
      expect(
        urls.some((u) => u.endsWith('/src/cli/main.ts')),
        name,
      ).toBe(true);
      expect(otelOnly(urls), name).toEqual([]);
    }
    // The same recorder, on the traced enqueue above: the SDK, the exporter and the instrumentation.
    const on = otelOnly(recorded('enqueue-on'));
    for (const part of [
      '@opentelemetry/sdk-trace/',
      '@opentelemetry/exporter-trace-otlp-http/',
      '@opentelemetry/instrumentation-http/',
      'bullmq-otel/',
    ]) {
      expect(
        on.some((u) => u.includes(part)),
        part,
      ).toBe(true);
    }
  });
});
