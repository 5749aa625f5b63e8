export const STORE_MODES = ['live', 'test'] as const;
export type StoreMode = (typeof STORE_MODES)[number];
/** The environment of a key or xpub: the same two values as a store's mode. */
export type Env = StoreMode;

export interface Store {
  id: string;
  name: string;
  mode: StoreMode;
  confirmationsRequired: number;
  expiryMinutes: number;
  lateWindowMinutes: number;
  logoUrl: string | null;
  brandColor: string | null;
  createdAt: number;
  archivedAt: number | null;
}

export const STORE_LIMITS = {
  nameMaxLength: 100,
  confirmations: { min: 0, max: 6 },
  expiryMinutes: { min: 5, max: 120 },
  lateWindowMinutes: { min: 0, max: 525_600 },
  urlMaxLength: 2048,
} as const;

export interface StoreSettings {
  name?: string;
  mode?: StoreMode;
  confirmationsRequired?: number;
  expiryMinutes?: number;
  lateWindowMinutes?: number;
  logoUrl?: string | null;
  brandColor?: string | null;
}
