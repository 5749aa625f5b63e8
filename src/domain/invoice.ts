// The invoice record as the domain sees it. Times are epoch milliseconds,
// money is integer sats (fiat as integer cents). The public JSON shape is made
// from this by src/domain/invoice-view.ts.
export const INVOICE_STATUSES = ['pending', 'paid', 'late_paid', 'cancelled', 'expired'] as const;
export type InvoiceStatus = (typeof INVOICE_STATUSES)[number];

export const PAYMENT_STATUSES = ['mempool', 'confirmed', 'replaced'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

export interface Payment {
  txid: string;
  vout: number;
  amountSats: number;
  status: PaymentStatus;
  /** Confirmations now (0 for mempool and replaced). */
  confirmations: number;
  /**
   * A coinbase output (a block's first transaction: a miner or pool paying
   * straight from the block). `status` still says where it is; it counts as
   * confirmed only once it can be spent (invoice-amounts.ts).
   */
  coinbase: boolean;
  blockHeight: number | null;
  /** The block that confirmed it (chain payments only). */
  blockHash?: string | null;
  firstSeenAt: number;
  /**
   * A replaced payment only: when Till learned it was replaced or gone from its
   * node (set by the state machine, not by whoever reports the payment).
   */
  replacedAt?: number | null;
}

export interface FiatPrice {
  /** Price in integer cents. */
  amountCents: number;
  currency: 'USD';
  /** USD per BTC in integer cents. */
  rateCentsPerBtc: number;
  rateSource: string;
  rateFetchedAt: number;
}

export interface Invoice {
  id: string;
  storeId: string;
  livemode: boolean;
  status: InvoiceStatus;
  amountSats: number;
  fiat: FiatPrice | null;
  address: string;
  confirmationsRequired: number;
  /** Length of the late window after expiry, in ms. */
  lateWindowMs: number;
  expiresAt: number;
  createdAt: number;
  paidAt: number | null;
  cancelledAt: number | null;
  expiredAt: number | null;
  /**
   * When the on-time payments a pending invoice waited for past expires_at
   * stopped covering it while the chain was being caught up with (it could not
   * expire then: a block not read yet may hold the rest); its expiry is dated
   * then. Not public.
   */
  waitEndedAt?: number | null;
  metadata: Record<string, string>;
  callbackUrl: string | null;
  payments: Payment[];
}
