import { Agent, request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import { useCliSuite } from '../helpers/cli-suite.ts';
import { startServe, type ServeProcess } from '../helpers/serve.ts';
import { EVM, keysUnder, newPrefix } from './ingest-fixtures.ts';

const TOKEN = 'hook-token-hostile-0123456789';
const METRICS = 'metrics-token-hostile-0123456789';
const APPROVER = 'approver-token-hostile-98765';

const cli = useCliSuite('usdc-hostile-');

type Answer = { status: number; headers: Record<string, string | string[] | undefined>; body: string };

/** One request over a raw socket (the target exactly as given, no client-side normalisation). */
async function rawRequest(
  port: number,
  target: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return await new Promise<Answer>((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, path: target, method: 'GET', headers, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * Runs `during` while GET /healthz is asked again and again on its own connections; every answer
 * must be 200. How fast the refusal and /healthz are: the bench, `BENCH_ONLY=responsiveness`.
 */
async function withHealthzProbe<T>(api: ServeProcess, during: () => Promise<T>): Promise<{ result: T }> {
  let done = false;
  const statuses: number[] = [];
  const probe = (async () => {
    while (!done) {
      const res = await fetch(`${api.url}/healthz`, { signal: AbortSignal.timeout(20_000) });
      await res.arrayBuffer();
      statuses.push(res.status);
    }
  })();
  try {
    return { result: await during() };
  } finally {
    done = true;
    await probe;
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
  }
}

/**
 * Section 1 of issue 23, against a running `serve`: hostile input is refused while /healthz keeps
 * answering, refusals are readable, and nothing is learned without the token. (How fast: the bench,
 * `BENCH_ONLY=responsiveness`.)
 */
describe('usdc-batch serve under hostile input', () => {
  let api: ServeProcess;
  let port: number;
  let prefix: string;

  beforeAll(async () => {
    prefix = newPrefix();
    api = await startServe({
      REDIS_URL: cli.suite.url,
      QUEUE_PREFIX: prefix,
      HOOK_TOKEN: TOKEN,
      APPROVER_TOKEN: APPROVER,
      LOG_LEVEL: 'info',
    });
    port = Number(new URL(api.url).port);
    // The first requests load and compile code (the CSV parser's first pass over a large body is
    // interpreted): warm up first.
    expect((await api.call('/healthz')).status).toBe(200);
    expect((await api.call('/v1/batches', { token: TOKEN })).status).toBe(200);
    const warm = await api.call('/v1/batches', {
      method: 'POST',
      token: TOKEN,
      headers: { 'content-type': 'text/csv' },
      body: `from,to,amount,recipient\n${`DOGE,BASE,1,${'x'.repeat(1000)}\n`.repeat(1000)}`,
    });
    expect(warm.status).toBe(422);
  });
  afterAll(async () => {
    await api?.stop();
  });

  it('refuses a JSON batch with a 150,000-character recipient at once, /healthz answering throughout', async () => {
    const body = JSON.stringify({
      transfers: [{ from: 'BASE', to: 'BASE', amount: '1.00', recipient: '2'.repeat(150_000) }],
    });
    const { result } = await withHealthzProbe(api, async () => {
      const res = await api.call('/v1/batches', {
        method: 'POST',
        token: TOKEN,
        headers: { 'content-type': 'application/json' },
        body,
      });
      return { res, text: await res.text() };
    });
    expect(result.res.status).toBe(400);
    expect(JSON.parse(result.text)).toMatchObject({ code: 'USDC_HTTP_STRING_TOO_LONG' });
    expect(result.text.length).toBeLessThan(1_000);
    expect(await keysUnder(cli.redis, prefix)).toEqual([]);
  });

  it('refuses a JSON row of 400,000 unknown keys (5 MB) and a body nested 100,000 deep with a 400, /healthz answering in between', async () => {
    // Issue 43: HTTP 500 ("Maximum call stack size exceeded") after 5.6 s, /healthz blocked meanwhile.
    const row: Record<string, string> = {
      from: 'BASE',
      to: 'ARB',
      amount: '1.00',
      recipient: EVM[0],
    };
    for (let i = 0; i < 400_000; i++) row[`k${i}`] = 'v';
    const wide = JSON.stringify({ transfers: [row] });
    expect(wide.length).toBeGreaterThan(5_000_000);
    const deep = `{"transfers":[${'['.repeat(100_000)}${']'.repeat(100_000)}]}`;
    for (const [body, code] of [
      [wide, 'USDC_HTTP_TOO_MANY_KEYS'],
      [deep, 'USDC_HTTP_TOO_DEEP'],
    ] as const) {
      let answered = false;
      let between = 0;
      const { result } = await withHealthzProbe(api, async () => {
        // /healthz answers interleave with the hostile request: counted while it is unanswered.
        const interleaved = (async () => {
          while (!answered) {
            const res = await fetch(`${api.url}/healthz`, { signal: AbortSignal.timeout(20_000) });
            await res.arrayBuffer();
            if (!answered && res.status === 200) between++;
          }
        })();
        const res = await api.call('/v1/batches', {
          method: 'POST',
          token: TOKEN,
          headers: { 'content-type': 'application/json' },
          body,
        });
        const text = await res.text();
        answered = true;
        await interleaved;
        return { res, text };
      });
      expect(result.res.status, result.text).toBe(400);
      expect(JSON.parse(result.text)).toMatchObject({ code });
      expect(between).toBeGreaterThan(0);
    }
    expect(await keysUnder(cli.redis, prefix)).toEqual([]);
  });

  it('refuses CSV rows with 64 KB recipients at once, at their line and column, /healthz answering throughout', async () => {
    const long = '2'.repeat(64 * 1024 - 100);
    const rows = Array.from({ length: 8 }, () => `BASE,BASE,1.00,${long}`).join('\n');
    const { result } = await withHealthzProbe(api, async () => {
      const res = await api.call('/v1/batches', {
        method: 'POST',
        token: TOKEN,
        headers: { 'content-type': 'text/csv' },
        body: `from,to,amount,recipient\n${rows}\n`,
      });
      return { res, text: await res.text() };
    });
    expect(result.res.status).toBe(422);
    const doc = JSON.parse(result.text) as { errors: { line: number; column: string; message: string }[] };
    expect(doc.errors).toHaveLength(8);
    expect(doc.errors[0]).toEqual({
      line: 2,
      column: 'recipient',
      message: `recipient is ${long.length} characters long; at most 64 are allowed`,
    });
  });

  it('refuses a callback_url over 2,048 characters', async () => {
    const res = await api.call('/v1/batches', {
      method: 'POST',
      token: TOKEN,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        transfers: [{ from: 'BASE', to: 'BASE', amount: '1.00', recipient: EVM[0] }],
        callback_url: `https://example.com/${'a'.repeat(2_100)}`,
      }),
    });
    expect(res.status).toBe(422);
    const doc = (await res.json()) as { errors: { column: string; message: string }[] };
    expect(doc.errors).toEqual([
      expect.objectContaining({ column: 'callback_url', message: expect.stringMatching(/at most 2048/) }),
    ]);
  });

  it('answers every request without the token with the same 401: long path parameters, bad escapes, unknown routes', async () => {
    const targets = [
      `/v1/batches/${'a'.repeat(150)}`,
      `/v1/recipients/${'b'.repeat(300)}`,
      '/v1/batches/%E0%A4%A',
      '/v1/batches/%zz',
      '/no/such/route',
      '/v1/nothing-here',
    ];
    const answers = await Promise.all(targets.map((t) => rawRequest(port, t)));
    for (const [i, a] of answers.entries()) {
      expect(a.status, targets[i]).toBe(401);
      expect(JSON.parse(a.body), targets[i]).toEqual({
        statusCode: 401,
        code: 'USDC_HTTP_UNAUTHORIZED',
        error: 'Unauthorized',
        message: 'missing or wrong bearer token',
      });
    }
    // With the token, the framework's refusals are answered in the API's format, never echoing the path.
    const auth = { authorization: `Bearer ${TOKEN}` };
    const long = await rawRequest(port, `/v1/batches/${'a'.repeat(150)}`, auth);
    expect(long.status).toBe(404);
    expect(long.body).not.toContain('a'.repeat(100));
    const bad = await rawRequest(port, '/v1/batches/%zz', auth);
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body)).toMatchObject({ code: 'USDC_HTTP_BAD_URL' });
    expect(bad.body).not.toContain('%zz');
  });

  it('answers a duplicated query parameter with 400', async () => {
    for (const target of [
      '/v1/batches/x?state=failed&state=queued',
      '/v1/recipients?x=1&x=2',
      '/ui/batches/x?limit=1&limit=2',
    ]) {
      const a = await rawRequest(port, target, { authorization: `Bearer ${TOKEN}` });
      expect(a.status, target).toBe(400);
      expect(JSON.parse(a.body), target).toMatchObject({ code: 'USDC_HTTP_BAD_QUERY' });
    }
  });

  it("gives every answer, bull-board's included, nosniff, no-store, a CSP with frame-ancestors 'none' and X-Frame-Options DENY", async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const dashboard = await rawRequest(port, '/dashboard', auth);
    const script = /src="(static\/js\/[^"]+\.js)"/.exec(dashboard.body)?.[1];
    const style = /href="(static\/css\/[^"]+\.css)"/.exec(dashboard.body)?.[1];
    expect(script && style, 'bull-board page names its script and stylesheet').toBeTruthy();
    const none = {};
    for (const [target, status, headers] of [
      ['/v1/batches', 200, auth],
      ['/v1/batches/nope', 404, auth],
      ['/v1/batches/%zz', 400, auth],
      ['/v1/recipients', 401, none],
      ['/ui', 200, auth],
      ['/ui/treasury', 200, auth],
      ['/dashboard', 200, auth],
      ['/dashboard/', 200, auth],
      ['/dashboard', 401, none],
      ['/dashboard/api/queues', 200, auth],
      [`/dashboard/${script}`, 200, none],
      [`/dashboard/${style}`, 200, none],
      ['/dashboard/static/images/logo.svg', 200, none],
      ['/healthz', 200, none],
      ['/readyz', 200, auth],
      ['/metrics', 200, auth],
      ['/openapi.json', 200, auth],
    ] as const) {
      const a = await rawRequest(port, target, headers);
      expect(a.status, target).toBe(status);
      expect(a.headers['x-content-type-options'], target).toBe('nosniff');
      expect(a.headers['cache-control'], target).toBe('no-store');
      expect(a.headers['x-frame-options'], target).toBe('DENY');
      const csp = String(a.headers['content-security-policy'] ?? '');
      expect(csp, target).toMatch(/(^|; )frame-ancestors 'none'(;|$)/);
      expect(csp, target).toMatch(/(^|; )default-src 'none'(;|$)/);
    }
    // bull-board's page runs its own scripts and styles, from this server only; nothing inline.
    const csp = String(dashboard.headers['content-security-policy']);
    expect(csp).toMatch(/(^|; )script-src 'self'(;|$)/);
    expect(csp).toMatch(/(^|; )style-src 'self'(;|$)/);
    expect(csp).not.toMatch(/unsafe-|\*|https?:/);
    // The batch pages keep their stricter policy: no script at all.
    const ui = await rawRequest(port, '/ui', auth);
    expect(String(ui.headers['content-security-policy'])).not.toMatch(/script-src/);
  });

  it('refuses bidi, zero-width and C1 characters in memos and labels, at their line and column', async () => {
    const csv = await api.call('/v1/batches', {
      method: 'POST',
      token: TOKEN,
      headers: { 'content-type': 'text/csv' },
      body: `from,to,amount,recipient,memo\nBASE,BASE,1.00,${EVM[0]},ok\nBASE,BASE,2.00,${EVM[1]},Invoice \u202efdp.exe\n`,
    });
    expect(csv.status).toBe(422);
    expect(((await csv.json()) as { errors: unknown[] }).errors).toEqual([
      {
        line: 3,
        column: 'memo',
        message:
          'memo contains a bidirectional text control (U+202E at character 9); a memo is plain text on one line',
      },
    ]);
    const approver = { authorization: `Bearer ${APPROVER}`, 'content-type': 'application/json' };
    const one = await api.call('/v1/recipients', {
      method: 'POST',
      headers: approver,
      body: JSON.stringify({ address: EVM[0], label: 'Acme\u0085payroll' }),
    });
    expect(one.status).toBe(422);
    expect(((await one.json()) as { message: string }).message).toBe(
      'label contains a control character (U+0085 at character 5); a label is plain text on one line',
    );
    const list = await api.call('/v1/recipients', {
      method: 'POST',
      headers: { ...approver, 'content-type': 'text/csv' },
      body: `address,label\n${EVM[0]},Acme\n${EVM[1]},Pay\u200broll\n`,
    });
    expect(list.status).toBe(422);
    expect(((await list.json()) as { errors: unknown[] }).errors).toEqual([
      {
        line: 3,
        column: 'label',
        message:
          'label contains an invisible (zero-width) character (U+200B at character 4); a label is plain text on one line',
      },
    ]);
    const cliAdd = await runCli(['recipients', 'add', EVM[2], '--label', 'Acme\u2066x'], cli.env(prefix));
    expect(cliAdd.code).toBe(1);
    expect(cliAdd.stderr + cliAdd.stdout).toContain('label contains a bidirectional text control (U+2066');
    expect(await cli.redis.hlen(`${prefix}:recipients`)).toBe(0);
  });

  it('never returns a stored label’s control or invisible characters raw: GET /v1/recipients, recipients list --json and the table', async () => {
    // A label stored before such characters were refused.
    const label = 'Acme\u202eyllorap\u0085\u200b';
    await cli.redis.hset(
      `${prefix}:recipients`,
      `evm:${EVM[3].toLowerCase()}`,
      JSON.stringify({ address: EVM[3], family: 'evm', label, added_by: 'cli:old', added_at: 1, via: 'add' }),
    );
    const raw = /[\u0080-\u009f\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/;
    const res = await api.call('/v1/recipients', { token: TOKEN });
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).not.toMatch(raw);
    expect(text).toContain('Acme\\u202eyllorap\\u0085\\u200b');
    expect((JSON.parse(text) as { recipients: { label: string }[] }).recipients[0]?.label).toBe(label);
    const json = await runCli(['recipients', 'list', '--json'], cli.env(prefix));
    expect(json.code).toBe(0);
    expect(json.stdout).not.toMatch(raw);
    expect((JSON.parse(json.stdout) as { recipients: { label: string }[] }).recipients[0]?.label).toBe(label);
    const table = await runCli(['recipients', 'list'], cli.env(prefix));
    expect(table.stdout).not.toMatch(raw);
    expect(table.stdout).toContain('Acme\\u202eyllorap\\x85\\u200b');
    await cli.redis.del(`${prefix}:recipients`);
  });

  it('never writes a secret sent in a query string to its log', async () => {
    const secret = 'querysecret-0123456789abcdef';
    const a = await rawRequest(port, `/v1/batches?token=${secret}&access_token=${secret}&state=failed`);
    expect(a.status).toBe(401);
    const b = await rawRequest(port, `/v1/batches/x?api_key=${secret}`, { authorization: `Bearer ${TOKEN}` });
    expect(b.status).toBe(404);
    // The request lines are written as the answers go: wait for both to be in the log.
    const lines = await waitForLog(api, (log) => log.includes('api_key=[redacted]'));
    expect(lines).toContain('/v1/batches?token=[redacted]&access_token=[redacted]&state=failed');
    expect(lines).not.toContain(secret);
  });
});

/**
 * A 35 MB upload over the 10 MB limit: before, the first got its 413 and the next ones on the same
 * client failed with EPIPE (the server closed the connection the client was still writing to). Its
 * own `serve`, so that the client's connections are only these uploads'.
 */
describe('oversized uploads', () => {
  let api: ServeProcess;
  let port: number;

  beforeAll(async () => {
    api = await startServe({ REDIS_URL: cli.suite.url, QUEUE_PREFIX: newPrefix(), HOOK_TOKEN: TOKEN });
    port = Number(new URL(api.url).port);
  });
  afterAll(async () => {
    await api?.stop();
  });

  it('answers three 35 MB uploads in a row from fetch with a readable 413 each', async () => {
    const body = Buffer.alloc(35 * 1024 * 1024, 'a');
    for (let i = 0; i < 3; i++) {
      const res = await api.call('/v1/batches', {
        method: 'POST',
        token: TOKEN,
        headers: { 'content-type': 'text/csv' },
        body,
      });
      expect(res.status, `upload ${i + 1}`).toBe(413);
      expect(await res.json()).toMatchObject({ statusCode: 413 });
    }
  });

  it('answers three 35 MB uploads in a row on a keep-alive agent with a readable 413 each', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const body = Buffer.alloc(35 * 1024 * 1024, 'a');
    try {
      for (let i = 0; i < 3; i++) {
        const answer = await new Promise<Answer>((resolve, reject) => {
          const req = httpRequest(
            {
              host: '127.0.0.1',
              port,
              path: '/v1/batches',
              method: 'POST',
              agent,
              headers: {
                authorization: `Bearer ${TOKEN}`,
                'content-type': 'text/csv',
                'content-length': String(body.length),
              },
            },
            (res) => {
              let text = '';
              res.setEncoding('utf8');
              res.on('data', (d: string) => (text += d));
              res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
            },
          );
          req.on('error', reject);
          req.end(body);
        });
        expect(answer.status, `upload ${i + 1}`).toBe(413);
        expect(JSON.parse(answer.body)).toMatchObject({ statusCode: 413 });
      }
    } finally {
      agent.destroy();
    }
  });
});

async function waitForLog(api: ServeProcess, seen: (log: string) => boolean): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const log = api.process.output();
    if (seen(log)) return log;
    if (Date.now() > deadline)
      throw new Error(`the log never showed what was expected:\n${log.slice(-2_000)}`);
    // The next output, or the deadline: whichever comes first.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, deadline - Date.now());
      api.process.child.stderr?.once('data', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

describe('repeated authentication failures', () => {
  let api: ServeProcess;
  let port: number;

  beforeAll(async () => {
    api = await startServe({
      REDIS_URL: cli.suite.url,
      QUEUE_PREFIX: newPrefix(),
      HOOK_TOKEN: TOKEN,
      METRICS_TOKEN: METRICS,
    });
    port = Number(new URL(api.url).port);
  });
  afterAll(async () => {
    await api?.stop();
  });

  it('answers 429 with Retry-After to a client after 20 failures, but never to a valid credential; /healthz stays open', async () => {
    for (let i = 0; i < 20; i++) {
      const a = await rawRequest(port, '/v1/batches', {
        authorization: `Bearer wrong-token-${i}-0123456789`,
      });
      expect(a.status, `failure ${i + 1}`).toBe(401);
    }
    for (const headers of [{ authorization: `Bearer wrong-token-x-0123456789` }, {}]) {
      const blocked = await rawRequest(port, '/v1/batches', headers);
      expect(blocked.status).toBe(429);
      expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
      expect(Number(blocked.headers['retry-after'])).toBeLessThanOrEqual(60);
      expect(JSON.parse(blocked.body)).toMatchObject({ code: 'USDC_HTTP_TOO_MANY_FAILURES' });
    }
    // Finding 8 of issue 33: the right token, and the Prometheus scrape, were locked out for 60 s.
    expect((await rawRequest(port, '/v1/batches', { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
    expect((await rawRequest(port, '/metrics', { authorization: `Bearer ${METRICS}` })).status).toBe(200);
    expect((await rawRequest(port, '/healthz')).status).toBe(200);
  });
});

describe('secrets too short', () => {
  it('refuses to start serve with a HOOK_TOKEN, APPROVER_TOKEN or HOOK_HMAC_SECRET under 16 characters, saying how to make one', async () => {
    const r = await runCli(['serve'], {
      REDIS_URL: 'redis://127.0.0.1:1',
      HOOK_TOKEN: 'short-token',
      APPROVER_TOKEN: 'ab',
      HOOK_HMAC_SECRET: 'x',
    });
    expect(r.code).toBe(2);
    for (const name of ['HOOK_TOKEN', 'APPROVER_TOKEN', 'HOOK_HMAC_SECRET']) {
      expect(r.stderr).toContain(`${name}: is shorter than 16 characters`);
    }
    expect(r.stderr).toContain('openssl rand -hex 32');
    expect(r.stderr).not.toContain('short-token');
  });
});

describe('export -o into a missing folder', () => {
  it('says so on one line and exits 2', async () => {
    const prefix = newPrefix();
    const file = cli.write('one.csv', `from,to,amount,recipient\nBASE,BASE,1.00,${EVM[0]}\n`);
    const enq = await runCli(['enqueue', file, '--batch-id', 'exp-1', '--json'], cli.env(prefix));
    expect(enq.code, enq.stderr).toBe(0);
    const target = `${cli.dir}/no-such-folder/out.csv`;
    const r = await runCli(['export', 'exp-1', '-o', target], cli.env(prefix));
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`error: cannot write ${target}: no such file or directory (ENOENT)\n`);
  });
});
