import type { Rng } from '../../helpers/rng.ts';

// The API fuzz test's request generator (fuzz.property.test.ts): a valid
// request for a route of the app, then a few mutations of its method, path,
// query, headers, JSON body or HTTP framing, written out as raw bytes.

/** What the generator knows of the till under test. */
export interface FuzzWorld {
  storeId: string;
  key: string;
  /** Keys refused in each of the spec's ways (5): another store's, revoked, a live key on a test store, a live store's. */
  otherKey: string;
  revokedKey: string;
  wrongEnvKey: string;
  liveKey: string;
  otherStoreId: string;
  /** The store's invoices (grows as creations succeed), another store's, a live one. */
  invoiceIds: string[];
  otherInvoiceId: string;
  liveInvoiceId: string;
  /** The store's endpoints (grows), one deleted, another store's. */
  endpointIds: string[];
  deletedEndpointId: string;
  otherEndpointId: string;
}

export interface FuzzRequest {
  method: string;
  path: string;
  /** '' or '?…' */
  query: string;
  headers: Array<[string, string]>;
  /** The JSON body as an object while mutations may still change its fields, then as text or bytes. */
  value: Record<string, unknown> | undefined;
  body: Buffer | null;
  framing: 'length' | 'chunked' | 'chunked-bad' | 'length-and-chunked' | 'length-short' | 'length-long' | 'length-odd' | 'lengths-twice' | 'no-length';
  /** Half-close the connection once written (the server then reads the body's end). */
  end: boolean;
  /** Every mutation applied, by kind: the test checks each kind was reached. */
  tags: string[];
}

const JSON_TYPE: [string, string] = ['Content-Type', 'application/json'];
/** Stands for the server's host:port in a Host header (serializeRequest writes it). */
const HOST = '\u0000host';
const base62 = (rng: Rng, n: number) => Array.from({ length: n }, () => rng.pick([...'0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'])).join('');
const auth = (key: string): [string, string] => ['Authorization', `Bearer ${key}`];

/** A valid request of one of the app's routes (or an unknown path). */
function baseRequest(rng: Rng, w: FuzzWorld): FuzzRequest {
  const inv = rng.pick(w.invoiceIds);
  const wid = rng.pick(w.endpointIds);
  const hooks = `/v1/stores/${w.storeId}/webhooks`;
  const r = (method: string, path: string, value?: Record<string, unknown>, query = ''): FuzzRequest => ({
    method,
    path,
    query,
    headers: [['Host', HOST], auth(w.key), ...(value ? [JSON_TYPE] : [])],
    value,
    body: null,
    framing: 'length',
    end: false,
    tags: [],
  });
  const make = (): FuzzRequest => {
    switch (rng.int(0, 23)) {
      case 0:
      case 1:
      case 2: {
        const body = rng.pick<Record<string, unknown>>([
          { amount_sats: rng.int(1, 1_000_000) },
          { amount: rng.pick(['12.50', 3, '0.99']), currency: rng.pick(['USD', 'usd']) },
          { amount_sats: 2500, expires_in_minutes: rng.int(5, 120), metadata: { order: String(rng.int(1, 999)) }, callback_url: 'http://127.0.0.1:9/cb' },
        ]);
        const req = r('POST', '/v1/invoices', body);
        if (rng.chance(0.5)) req.headers.push(['Idempotency-Key', `fz-${rng.int(0, 5)}`]);
        return req;
      }
      case 3:
        return r('GET', '/v1/invoices', undefined, rng.pick(['', '?limit=2', '?status=pending', `?starting_after=${inv}`, '?created_gte=2020-01-01&limit=100']));
      case 4:
      case 5:
        return r('GET', `/v1/invoices/${inv}`);
      case 6:
        return r('POST', `/v1/invoices/${inv}/cancel`, rng.chance(0.5) ? {} : undefined);
      case 7:
      case 8:
        return r('POST', `/v1/invoices/${inv}/simulate`, rng.pick([{ event: 'paid' }, { event: 'payment_detected', amount_sats: 100 }, { event: 'expired' }, { event: 'late_paid' }]));
      case 9:
        return r('GET', hooks);
      case 10:
        return r('POST', hooks, { url: 'http://127.0.0.1:9/hooks', ...(rng.chance(0.5) ? { enabled_events: ['invoice.paid'], description: 'shop' } : {}) });
      case 11:
        return r('GET', `${hooks}/${wid}`);
      case 12:
        return r('POST', `${hooks}/${wid}`, rng.pick([{ enabled: rng.chance(0.5) }, { description: 'd' }, { url: 'http://127.0.0.1:9/other', enabled_events: ['*'] }]));
      case 13:
        return r('DELETE', `${hooks}/${rng.pick([wid, w.deletedEndpointId])}`);
      case 14:
        return r('POST', `${hooks}/${wid}/${rng.pick(['rotate-secret', 'test'])}`, rng.chance(0.5) ? {} : undefined);
      case 15:
        return r('POST', `/v1/stores/${w.storeId}/${rng.pick(['callback-secret/rotate', 'test-invoice'])}`);
      case 16:
      case 17:
        return r('GET', `/pay/invoices/${inv}${rng.pick(['', '/events', '/stream'])}`);
      case 18:
        return r('GET', rng.pick([`/checkout/${inv}`, `/checkout/${inv}?plain`, `/checkout/${inv}/qr.svg`, `/checkout/${inv}/qr.png`, '/checkout/', '/checkout', `/checkout/${inv}/`, '/checkout/assets/checkout.js']));
      case 19:
        return r('GET', `/stores/${w.storeId}/xpubs`);
      case 20:
        return r('GET', '/healthz');
      case 21:
        return r('GET', '/v1/openapi.json');
      case 22:
        return r('OPTIONS', `/pay/invoices/${inv}`);
      default:
        return r(rng.pick(['GET', 'POST']), rng.pick(['/', '/v1', '/v1/nope', '/v2/invoices', '/pay', '/favicon.ico']));
    }
  };
  return make();
}

// ---- mutations -------------------------------------------------------------

/** Raw JSON tokens put where a field's value was: wrong types, odd numbers, odd strings. */
const ODD_VALUES = [
  '"1000"', '[]', '[1000]', '{}', '{"a":{"b":1}}', 'null', 'true', '1.5', '-1', '0', '-0', '1e400', '-1e400', '1e-400', '9007199254740993',
  '123456789012345678901234567890', '1E3', '""', '"é"', '"\\u0000"', '"\\ud800"', '"\\udfff\\ud800"', `"${'x'.repeat(5000)}"`, '"<script>"', '"12.345"', '" 12.50"',
  '"\u{1F600}"', '"a\\nb"', '"http://[::1"', '"javascript:alert(1)"', '["invoice.paid","invoice.paid"]', '["*","nope"]', '{"__proto__":"x"}',
];
/** Put where an odd value goes; its JSON text is then replaced by the value's. */
const PLACEHOLDER = '\u0001fuzz\u0001';

/** A path to one of the value's fields, nested ones too (metadata.order, enabled_events[0]). */
function pickField(rng: Rng, value: Record<string, unknown>): Array<string | number> | null {
  const paths: Array<Array<string | number>> = [];
  const walk = (v: unknown, path: Array<string | number>) => {
    if (path.length) paths.push(path);
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, [...path, i]));
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, [...path, k]);
  };
  walk(value, []);
  return paths.length ? rng.pick(paths) : null;
}

function setAt(value: any, path: Array<string | number>, to: unknown): void {
  let o = value;
  for (const p of path.slice(0, -1)) o = o[p];
  o[path.at(-1)!] = to;
}

type Mutation = (req: FuzzRequest, rng: Rng, w: FuzzWorld) => void;

const setHeader = (req: FuzzRequest, name: string, value: string | null) => {
  req.headers = req.headers.filter(([n]) => n.toLowerCase() !== name.toLowerCase());
  if (value !== null) req.headers.push([name, value]);
};
/** A header value as UTF-8 bytes, each read by Node as one latin1 character. */
const utf8Header = (s: string) => Buffer.from(s, 'utf8').toString('latin1');
const ensureBody = (req: FuzzRequest) => {
  req.value ??= { amount_sats: 1000 };
  if (!req.headers.some(([n]) => n.toLowerCase() === 'content-type')) req.headers.push(JSON_TYPE);
};

/** Mutations of the JSON value, applied before it is written out. */
const VALUE_MUTATIONS: Record<string, Mutation> = {
  'field-odd-value': (req, rng) => {
    ensureBody(req);
    const path = pickField(rng, req.value!) ?? ['amount_sats'];
    setAt(req.value, path, PLACEHOLDER);
  },
  'field-extra': (req, rng) => {
    ensureBody(req);
    req.value![rng.pick(['amountSats', 'constructor', 'é', '', 'x'.repeat(100), 'livemode', 'id', 'status'])] = rng.pick([1, 'x', null]);
  },
  'field-missing': (req, rng) => {
    ensureBody(req);
    const path = pickField(rng, req.value!);
    if (!path) return;
    let o: any = req.value;
    for (const p of path.slice(0, -1)) o = o[p];
    if (Array.isArray(o)) o.splice(Number(path.at(-1)), 1);
    else delete o[path.at(-1)!];
  },
  'field-deep': (req, rng) => {
    ensureBody(req);
    let v: unknown = 1;
    for (let i = rng.int(30, 40); i > 0; i--) v = rng.chance(0.5) ? [v] : { a: v };
    req.value!.metadata = v;
  },
  'field-metadata': (req, rng) => {
    ensureBody(req);
    const n = rng.pick([50, 51]);
    req.value!.metadata = rng.pick([
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v'])),
      { [rng.pick(['k'.repeat(40), 'k'.repeat(41), 'é'.repeat(40), '', '__proto__', '\u{1F600}'.repeat(40)])]: rng.pick(['v'.repeat(255), 'v'.repeat(256), 'é'.repeat(255), '\u{1F600}'.repeat(256), 1]) },
    ]);
  },
};

/** Mutations of the body's text (or bytes), after it is written out. */
const TEXT_MUTATIONS: Record<string, (text: string, rng: Rng) => string | Buffer> = {
  'json-malformed': (text, rng) =>
    rng.pick([text.slice(0, rng.int(0, Math.max(0, text.length - 1))), `${text},`, text.replace('"', "'"), '{', '{"amount_sats":}', 'undefined', `${text}x`, '{"a":1}}', 'NaN', '{"amount_sats":1000,}']),
  'json-not-object': (_, rng) => rng.pick(['[]', '"x"', '1', 'null', 'true', '[{"amount_sats":1000}]', '  ']),
  'json-duplicate-key': (text, rng) => {
    const name = /"([^"\\]+)"\s*:/.exec(text)?.[1] ?? 'amount_sats';
    return text.replace('{', `{"${name}":${rng.pick(['1', '"x"', 'null'])},`);
  },
  // A name spelled with an escape ("\u0061mount_sats") is the same name.
  'json-escaped-key': (text) => text.replace(/"([a-z])(\w*)"\s*:/, (_, c: string, rest: string) => `"\\u00${c.charCodeAt(0).toString(16)}${rest}":`),
  'json-whitespace': (text, rng) => `${rng.pick([' ', '\n', '\t', '\r\n'])}${text.replace(/,/g, ' ,\n ')}${rng.pick([' ', '\n\n', ''])}`,
  'body-huge': (text, rng) => rng.pick([`${text}${' '.repeat(64 * 1024)}`, text.replace('{', `{"metadata":{"k":"${'v'.repeat(70_000)}"},`)]),
  'body-invalid-utf8': (text) => Buffer.concat([Buffer.from(text.slice(0, text.length - 2)), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from(text.slice(-2))]),
  'body-bom': (text) => `\uFEFF${text}`,
  'body-nul': (text) => `${text}\u0000`,
};

/** Mutations of the method, path and query, headers and framing. */
const REQUEST_MUTATIONS: Record<string, Mutation> = {
  'method-odd': (req, rng) => {
    req.method = rng.pick(['HEAD', 'OPTIONS', 'PATCH', 'PUT', 'DELETE', 'TRACE', 'FOO', req.method.toLowerCase(), req.method === 'GET' ? 'POST' : 'GET', 'M-SEARCH', 'PROPFIND']);
  },
  'path-encoded': (req, rng) => {
    req.path = rng.pick([
      req.path.replace(/\/inv_/, '/%69nv_').replace(/\/we_/, '/w%65_'),
      req.path.replace(/(inv_|we_|sto_)/, '$1%2F'),
      `${req.path}%2Fx`,
      req.path.replace(/[^/]+$/, (s) => `${s}%zz`),
      req.path.replace(/[^/]+$/, (s) => `${s}%`),
      req.path.replace(/[^/]+$/, (s) => `${s}%e0%a4`),
      req.path.replace(/[^/]+$/, (s) => `${s}%00`),
      req.path.replace(/[^/]+$/, (s) => `${s}%C3%A9`),
      req.path.replace(/v1/, '%76%31'),
    ]);
  },
  'path-odd': (req, rng, w) => {
    req.path = rng.pick([
      `${req.path}/`,
      req.path.replace('/', '//'),
      req.path.toUpperCase(),
      req.path.replace(/inv_\w+/, `inv_${'x'.repeat(5000)}`),
      req.path.replace(/inv_\w+/, rng.pick([w.otherInvoiceId, w.liveInvoiceId, `inv_${base62(rng, 26)}`, 'inv_', 'inv', 'null', '0'])),
      req.path.replace(/we_\w+/, rng.pick([w.otherEndpointId, w.deletedEndpointId, `we_${base62(rng, 26)}`])),
      req.path.replace(/sto_\w+/, rng.pick([w.otherStoreId, `sto_${base62(rng, 20)}`, 'sto_'])),
      req.path.replace(/[^/]+$/, (s) => `${s}/../x`),
      req.path.replace(/\/([^/]+)$/, '/%2e%2e/$1'),
      req.path.replace(/[^/]+$/, (s) => `${s}\\x`),
      utf8Header(req.path.replace(/[^/]+$/, (s) => `${s}é`)),
      `${req.path}#frag`,
      `http://127.0.0.1${req.path}`,
      `ftp://127.0.0.1${req.path}`,
      '*',
      `*${req.path}`,
    ]);
  },
  'query-odd': (req, rng) => {
    const q = req.query ? `${req.query}&` : '?';
    req.query = rng.pick([
      '?',
      '?=',
      '?&&',
      `${q}limit=`,
      `${q}limit=0`,
      `${q}limit=101`,
      `${q}limit=1e1`,
      `${q}limit=%31`,
      `${q}limit=1&limit=2`,
      `${q}status=PENDING`,
      `${q}created_gte=${rng.pick(['2026-02-30', 'x', '99999999999999', '2026-01-01T24:00:00Z', '-1'])}`,
      `${q}starting_after=${rng.pick(['inv_', 'x', `inv_${base62(rng, 26)}`])}`,
      `${q}starting_after=inv_a&ending_before=inv_b`,
      `${q}x=${'y'.repeat(10_000)}`,
      `${q}${'z'.repeat(300)}=1`,
      `${q}a[b]=1`,
      `${q}%zz=1`,
      `${q}expand=data`,
      `${q}limit=2;status=paid`,
      `${q}%00=%00`,
    ]);
  },
  'content-type-odd': (req, rng) => {
    setHeader(req, 'Content-Type', rng.pick([
      null, 'text/plain', 'application/json; charset=utf-16', 'application/json;charset=UTF-8', 'APPLICATION/JSON', 'application/jsonp', 'application/json, text/plain',
      'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded', '', ' application/json', 'application/json; charset="utf-8"', 'application/json ; x=y', 'application/merge-patch+json',
    ]));
  },
  'content-type-twice': (req, rng) => {
    req.headers.push(['Content-Type', rng.pick(['application/json', 'text/plain'])]);
  },
  'auth-odd': (req, rng, w) => {
    const key = w.key;
    setHeader(req, 'Authorization', rng.pick([
      null, 'Bearer', 'Bearer ', `bearer ${key}`, `BEARER ${key}`, `Basic ${Buffer.from(`${key}:`).toString('base64')}`, `Bearer ${key} `, `Bearer  ${key}`, `Bearer ${key}x`,
      `Bearer ${key.slice(0, -1)}`, `Bearer ${key},Bearer ${key}`, key, `Token ${key}`, `Bearer ${w.otherKey}`, `Bearer ${w.revokedKey}`, `Bearer ${w.wrongEnvKey}`, `Bearer ${w.liveKey}`,
      `Bearer svc_test_${base62(rng, 32)}`, `Bearer svc_live_${base62(rng, 32)}`, utf8Header(`Bearer svc_test_${'é'.repeat(32)}`), `Bearer ${'x'.repeat(5000)}`,
    ]));
  },
  'auth-twice': (req, rng, w) => {
    req.headers.push(['Authorization', `Bearer ${rng.pick([w.key, w.otherKey])}`]);
  },
  'idempotency-key-odd': (req, rng) => {
    setHeader(req, 'Idempotency-Key', rng.pick(['', ' ', 'a'.repeat(255), 'a'.repeat(256), utf8Header('é'.repeat(255)), utf8Header('é'.repeat(256)), utf8Header('\u{1F600}'), 'a\tb', `fz-${rng.int(0, 5)}`, '\u00e9']));
  },
  'idempotency-key-twice': (req, rng) => {
    req.headers.push(['Idempotency-Key', `fz-${rng.int(0, 5)}`], ['Idempotency-Key', `fz-${rng.int(0, 5)}`]);
  },
  'host-odd': (req, rng) => {
    const choice = rng.pick(['missing', 'twice', 'empty', 'odd']);
    if (choice === 'missing') req.headers = req.headers.filter(([n]) => n !== 'Host');
    else if (choice === 'twice') req.headers.push(['Host', rng.pick([HOST, 'example.com'])]);
    else setHeader(req, 'Host', choice === 'empty' ? '' : rng.pick(['exa mple', '[::1', 'a'.repeat(300), 'example.com:99999']));
  },
  'header-odd': (req, rng) => {
    const h = rng.pick<Array<[string, string]>>([
      [['Expect', '100-continue']], [['Expect', 'foo']], [['Upgrade', 'h2c'], ['Connection', 'Upgrade']], [['Upgrade', 'websocket'], ['Connection', 'Upgrade']],
      [['Upgrade', 'websocket'], ['Connection', 'Upgrade'], ['Sec-WebSocket-Version', '13'], ['Sec-WebSocket-Key', 'dGhlIHNhbXBsZSBub25jZQ==']],
      [['X-Forwarded-For', rng.pick(['garbage', '1.2.3.4, , x', '::1'])]], [['Last-Event-ID', rng.pick(['x', '-1', '1e400', '9'.repeat(400), '1.5'])]],
      [['Accept', 'text/html']], [['Origin', 'http://evil.example']], [['Content-Encoding', 'gzip']], [['Transfer-Encoding', 'gzip']],
      [['X-Long', 'x'.repeat(rng.pick([8000, 20_000]))]], [['Cookie', 'session=x']], [['If-None-Match', '*']], [['Range', 'bytes=0-1']],
    ]);
    req.headers.push(...h);
  },
  'body-on-get': (req, rng) => {
    if (req.method !== 'GET' && req.method !== 'DELETE') return;
    req.value = { amount_sats: 1 };
    if (rng.chance(0.5)) req.headers.push(JSON_TYPE);
  },
  'framing-odd': (req, rng) => {
    req.framing = rng.pick(['chunked', 'chunked', 'chunked-bad', 'length-and-chunked', 'length-short', 'length-long', 'length-odd', 'lengths-twice', 'no-length']);
    if (req.framing === 'length-long') req.end = true;
    if (req.framing !== 'chunked') ensureBody(req);
  },
};

export const MUTATION_KINDS = [...Object.keys(VALUE_MUTATIONS), ...Object.keys(TEXT_MUTATIONS), ...Object.keys(REQUEST_MUTATIONS)];

/** One request: a valid one of a random route, with 0 to 3 mutations. */
export function generateRequest(rng: Rng, w: FuzzWorld): FuzzRequest {
  const req = baseRequest(rng, w);
  const count = rng.pick([0, 1, 1, 1, 2, 2, 3]);
  const textMutations: string[] = [];
  for (let i = 0; i < count; i++) {
    const kind = rng.pick(MUTATION_KINDS);
    req.tags.push(kind);
    if (kind in VALUE_MUTATIONS) VALUE_MUTATIONS[kind]!(req, rng, w);
    else if (kind in TEXT_MUTATIONS) textMutations.push(kind);
    else REQUEST_MUTATIONS[kind]!(req, rng, w);
  }
  if (textMutations.length) ensureBody(req);
  if (req.value !== undefined) {
    const odd = rng.pick(ODD_VALUES);
    let text: string | Buffer = JSON.stringify(req.value).replace(JSON.stringify(PLACEHOLDER), () => odd);
    for (const kind of textMutations) text = TEXT_MUTATIONS[kind]!(String(text), rng);
    req.body = Buffer.isBuffer(text) ? text : Buffer.from(text, 'utf8');
  }
  return req;
}

/** The request as bytes on the wire, to the server at `host` (host:port); the connection closes after the answer. */
export function serializeRequest(req: FuzzRequest, host: string): Buffer {
  const headers = req.headers.map(([n, v]): [string, string] => [n, v === HOST ? host : v]);
  headers.push(['Connection', 'close']);
  const body = req.body ?? Buffer.alloc(0);
  const chunked = (b: Buffer, size: string | null) => {
    const parts: Buffer[] = [];
    for (let at = 0; at < b.length; at += 7000) {
      const piece = b.subarray(at, at + 7000);
      parts.push(Buffer.from(`${size ?? piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n'));
    }
    return Buffer.concat([...parts, Buffer.from('0\r\n\r\n')]);
  };
  let payload = body;
  switch (req.framing) {
    case 'length':
      if (req.body) headers.push(['Content-Length', String(body.length)]);
      break;
    case 'chunked':
      headers.push(['Transfer-Encoding', 'chunked']);
      payload = chunked(body, null);
      break;
    case 'chunked-bad':
      headers.push(['Transfer-Encoding', 'chunked']);
      payload = chunked(body, 'zz');
      break;
    case 'length-and-chunked':
      headers.push(['Content-Length', String(body.length)], ['Transfer-Encoding', 'chunked']);
      payload = chunked(body, null);
      break;
    case 'length-short':
      headers.push(['Content-Length', String(Math.max(0, body.length - 3))]);
      break;
    case 'length-long':
      headers.push(['Content-Length', String(body.length + 10)]);
      break;
    case 'length-odd':
      headers.push(['Content-Length', ['abc', '-1', '1e3', ` ${body.length}`, `+${body.length}`, '99999999999999999999'][body.length % 6]!]);
      break;
    case 'lengths-twice':
      headers.push(['Content-Length', String(body.length)], ['Content-Length', String(body.length + 1)]);
      break;
    case 'no-length':
      break;
  }
  const head = `${req.method} ${req.path}${req.query} HTTP/1.1\r\n${headers.map(([n, v]) => `${n}: ${v}\r\n`).join('')}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), payload]);
}
