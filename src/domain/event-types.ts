// Event types Till emits. Each invoice state change and each newly seen
// payment writes one of these to the outbox; webhook endpoints subscribe by type.
export const EVENT_TYPES = [
  'invoice.created',
  'invoice.payment_detected',
  'invoice.paid',
  'invoice.late_paid',
  'invoice.expired',
  'invoice.cancelled',
  'invoice.payment_reversed',
  'invoice.payment_restored',
] as const;

export type InvoiceEventType = (typeof EVENT_TYPES)[number];

/** Synthetic event sent by the endpoint test call; never written by an invoice change. */
export const WEBHOOK_TEST_EVENT_TYPE = 'webhook.test';

export type WebhookEventType = InvoiceEventType | typeof WEBHOOK_TEST_EVENT_TYPE;
