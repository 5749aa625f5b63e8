// Webhook signature fixtures. The expected hex values were NOT computed with
// Till's code: they came from OpenSSL 3.0.19, over the exact bytes below:
//   { printf '1795255513.'; printf '%s' "$BODY"; } | openssl dgst -sha256 -hmac "$SECRET" -r
// so a bug shared by signer and verifier cannot hide here. The invoice.paid
// body is the same one docs/WEBHOOKS.md shows and checks with openssl.

export const CURRENT_SECRET = 'whsec_jQJZCFUz3BCEVg9rSCXGx1ZdqubCZ6irRIULpMupQNO';
export const PREVIOUS_SECRET = 'whsec_mP7NXYJGLainUMKYyJOpS3J5UTO9K1jcQwXTV3aBwNV';

/** 2026-11-21T10:05:13Z */
export const T = 1795255513;
export const T_MS = T * 1000;

export const INVOICE_PAID_BODY =
  '{"event_id":"evt_01m7ys2b8scc5crd4eadq3t1wq","event_type":"invoice.paid","created_at":"2026-11-21T10:05:12.345Z","livemode":true,"data":{"invoice":{"id":"inv_01m7yrpc7rspwt7ppmhzfyg7qj","object":"invoice","livemode":true,"store_id":"sto_01m3xt1500n6gtqdyv00cwxrsg","status":"paid","amount_sats":21000,"amount":"12.50","currency":"USD","rate":{"usd_per_btc":"59523.81","source":"kraken","fetched_at":"2026-11-21T09:58:02.114Z"},"address":"bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu","payment_uri":"bitcoin:bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu?amount=0.00021000","amount_received_sats":21000,"amount_confirmed_sats":21000,"confirmations_required":1,"payments":[{"txid":"5e3f1c7a9b2d4e6f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7","vout":0,"amount_sats":21000,"confirmations":1,"block_height":873412,"status":"confirmed","coinbase":false,"first_seen_at":"2026-11-21T10:01:03.512Z"}],"expires_at":"2026-11-21T10:28:40.120Z","created_at":"2026-11-21T09:58:40.120Z","paid_at":"2026-11-21T10:05:12.201Z","cancelled_at":null,"expired_at":null,"metadata":{"order_id":"1042"},"callback_url":"https://shop.example.com/till/webhook","checkout_url":"https://till.example.com/checkout/inv_01m7yrpc7rspwt7ppmhzfyg7qj"}}}';

export const vectors = [
  {
    description: 'invoice.paid, current secret',
    body: INVOICE_PAID_BODY,
    secret: CURRENT_SECRET,
    v1: 'b9d3abe6b731ff891666dfd314fdff01a532680a12247ce0fee31f1ef42db0ae',
  },
  {
    description: 'invoice.paid, previous secret',
    body: INVOICE_PAID_BODY,
    secret: PREVIOUS_SECRET,
    v1: '0e550ae66fe613e5d0f1b678f7891aebdd60c388b23e6953a17986eb0e706215',
  },
  {
    description: 'non-ASCII body is signed as UTF-8 bytes',
    body: '{"note":"café ☕ naïve"}',
    secret: CURRENT_SECRET,
    v1: 'd91a63196b6faa0ebcd47ab50837affc4f48dd0b546d0874afb1e3fdda427441',
  },
];
