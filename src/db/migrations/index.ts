import { m0001_initial } from './0001_initial.ts';
import { m0002_webhooks } from './0002_webhooks.ts';
import { m0003_chain } from './0003_chain.ts';
import { m0004_watch_index_order } from './0004_watch_index_order.ts';
import { m0005_drop_xpub_index_unique } from './0005_drop_xpub_index_unique.ts';
import { m0006_one_list_index } from './0006_one_list_index.ts';
import { m0007_payment_spends } from './0007_payment_spends.ts';
import { m0008_payment_replaced_at } from './0008_payment_replaced_at.ts';
import { m0009_repair_edited_schemas } from './0009_repair_edited_schemas.ts';
import { m0010_deliveries_given_up } from './0010_deliveries_given_up.ts';
import { m0011_payment_coinbase } from './0011_payment_coinbase.ts';
import { m0012_invoice_wait_ended } from './0012_invoice_wait_ended.ts';
import { m0013_address_not_unique } from './0013_address_not_unique.ts';
import { m0014_auth_changes } from './0014_auth_changes.ts';
import { m0015_idempotency_rows_in_order } from './0015_idempotency_rows_in_order.ts';
import { m0016_invoice_list_table } from './0016_invoice_list_table.ts';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

// Bundled into the code (not read from loose files) so the single binary
// carries its schema. Append only: never edit a released migration.
export const MIGRATIONS: Migration[] = [m0001_initial, m0002_webhooks, m0003_chain, m0004_watch_index_order, m0005_drop_xpub_index_unique, m0006_one_list_index, m0007_payment_spends,
  m0008_payment_replaced_at, m0009_repair_edited_schemas, m0010_deliveries_given_up, m0011_payment_coinbase,
  m0012_invoice_wait_ended, m0013_address_not_unique, m0014_auth_changes, m0015_idempotency_rows_in_order,
  m0016_invoice_list_table];

MIGRATIONS.forEach((m, i) => {
  if (m.version !== i + 1) throw new Error(`migration ${m.name} is numbered ${m.version}, expected ${i + 1}`);
});
