import type { Db } from './connection.ts';

/** Sealed secrets as stored: the current one and, for 24 h after a rotation, the previous one. */
export interface SealedSecrets {
  secret: string;
  previous: string | null;
  previousExpiresAt: number | null;
}

/** What an attempt is sent with: the secrets, and the endpoint's URL as it is now (null for a callback_url, which never changes). */
export interface SendingSecrets extends SealedSecrets {
  url: string | null;
}

export interface EndpointRecord {
  id: string;
  storeId: string;
  url: string;
  description: string | null;
  enabledEvents: string[];
  enabled: boolean;
  secrets: SealedSecrets;
  createdAt: number;
  deletedAt: number | null;
}

interface Row {
  id: string;
  store_id: string;
  url: string;
  description: string | null;
  enabled_events: string;
  enabled: number;
  secret: string;
  secret_previous: string | null;
  secret_previous_expires_at: number | null;
  created_at: number;
  deleted_at: number | null;
}

const toRecord = (r: Row): EndpointRecord => ({
  id: r.id,
  storeId: r.store_id,
  url: r.url,
  description: r.description,
  enabledEvents: JSON.parse(r.enabled_events) as string[],
  enabled: r.enabled === 1,
  secrets: { secret: r.secret, previous: r.secret_previous, previousExpiresAt: r.secret_previous_expires_at },
  createdAt: r.created_at,
  deletedAt: r.deleted_at,
});

/** Secrets as the two secret queries read them (s, p, e); null when there is no current secret. */
const sealedFrom = (r: { s: string | null; p: string | null; e: number | null } | undefined): SealedSecrets | null =>
  r?.s ? { secret: r.s, previous: r.p, previousExpiresAt: r.e } : null;

/** A current secret in use: an endpoint's (not deleted) or a store's callback secret (endpointId null); an archived store's too, as its invoices' events are still delivered. */
export interface SecretInUse {
  storeId: string;
  endpointId: string | null;
  /** The endpoint's URL; null for a callback secret. */
  url: string | null;
  sealed: string;
}

/** How long a delivery may sign with secrets read earlier (see sendingSecrets). */
export const SENDING_SECRETS_TTL_MS = 1000;

export type WebhookEndpointsRepo = ReturnType<typeof createWebhookEndpointsRepo>;

export function createWebhookEndpointsRepo(db: Db) {
  const byId = db.prepare<[string], Row>('SELECT * FROM webhook_endpoints WHERE id = ?');
  // Sorted here, not by SQLite: every recorded event reads its store's endpoints,
  // and ORDER BY doubled the cost of that read (~8 µs against ~4) for a handful of rows.
  const byStore = db.prepare<[string], Row>('SELECT * FROM webhook_endpoints WHERE store_id = ? AND deleted_at IS NULL');
  const insert = db.prepare(
    `INSERT INTO webhook_endpoints (id, store_id, url, description, enabled_events, enabled, secret, created_at)
     VALUES (@id, @storeId, @url, @description, @enabledEvents, @enabled, @secret, @createdAt)`,
  );
  const update = db.prepare(
    `UPDATE webhook_endpoints SET url = @url, description = @description, enabled_events = @enabledEvents, enabled = @enabled,
       secret = @secret, secret_previous = @previous, secret_previous_expires_at = @previousExpiresAt, deleted_at = @deletedAt
     WHERE id = @id`,
  );
  const endpointSecrets = db.prepare<[string], { s: string; p: string | null; e: number | null; url: string }>(
    'SELECT secret AS s, secret_previous AS p, secret_previous_expires_at AS e, url FROM webhook_endpoints WHERE id = ? AND enabled = 1 AND deleted_at IS NULL',
  );
  const sending = new Map<string, { sealed: SendingSecrets | null; readAt: number }>();
  // url NULL: a callback_url delivery goes where its invoice said, which never changes.
  const storeSecrets = db.prepare<[string], { s: string | null; p: string | null; e: number | null; url: null }>(
    'SELECT callback_secret AS s, callback_secret_previous AS p, callback_secret_previous_expires_at AS e, NULL AS url FROM stores WHERE id = ?',
  );
  const setStoreSecrets = db.prepare<[string, string | null, number | null, string]>(
    'UPDATE stores SET callback_secret = ?, callback_secret_previous = ?, callback_secret_previous_expires_at = ? WHERE id = ?',
  );
  const inUse = db.prepare<[], SecretInUse>(
    `SELECT e.store_id AS storeId, e.id AS endpointId, e.url, e.secret AS sealed
       FROM webhook_endpoints e WHERE e.deleted_at IS NULL
     UNION ALL
     SELECT id, NULL, NULL, callback_secret FROM stores WHERE callback_secret IS NOT NULL
     ORDER BY 1, 2 NULLS FIRST`,
  );
  return {
    /** A deleted endpoint too (deletedAt set): the API answers it 410 gone. */
    get(id: string): EndpointRecord | null {
      const row = byId.get(id);
      return row ? toRecord(row) : null;
    },
    listForStore(storeId: string): EndpointRecord[] {
      return byStore.all(storeId).map(toRecord).sort((a, b) => (a.id < b.id ? -1 : 1));
    },
    insert(e: EndpointRecord): void {
      sending.clear();
      insert.run({ ...e, enabledEvents: JSON.stringify(e.enabledEvents), enabled: e.enabled ? 1 : 0, secret: e.secrets.secret });
    },
    update(e: EndpointRecord): void {
      sending.clear();
      update.run({ ...e, ...e.secrets, enabledEvents: JSON.stringify(e.enabledEvents), enabled: e.enabled ? 1 : 0 });
    },
    /**
     * What sending a delivery needs: its endpoint's secrets and current URL
     * (null once the endpoint is disabled or deleted), or for a callback_url
     * its store's secrets. Asked at every attempt: kept for
     * SENDING_SECRETS_TTL_MS, forgotten at once when this connection changes
     * them, so another process's change (the CLI's) applies within that time.
     */
    sendingSecrets(d: { endpointId: string | null; storeId: string }, now: number): SendingSecrets | null {
      const key = d.endpointId ?? d.storeId;
      const hit = sending.get(key);
      if (hit && now - hit.readAt < SENDING_SECRETS_TTL_MS && now >= hit.readAt) return hit.sealed;
      if (sending.size >= 1024) sending.clear();
      const row = d.endpointId === null ? storeSecrets.get(d.storeId) : endpointSecrets.get(d.endpointId);
      const secrets = sealedFrom(row);
      const sealed = secrets && { ...secrets, url: row!.url };
      sending.set(key, { sealed, readAt: now });
      return sealed;
    },
    /** The store's secrets for per-invoice callback_url deliveries. */
    getCallbackSecrets(storeId: string): SealedSecrets | null {
      return sealedFrom(storeSecrets.get(storeId));
    },
    /** Every current secret that signs or will sign: a store's callback secret first, then its endpoints. */
    listSecretsInUse(): SecretInUse[] {
      return inUse.all();
    },
    setCallbackSecrets(storeId: string, s: SealedSecrets): void {
      sending.clear();
      setStoreSecrets.run(s.secret, s.previous, s.previousExpiresAt, storeId);
    },
  };
}
