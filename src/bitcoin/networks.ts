// The chains a Till can run on, as bitcoinjs-lib network objects. One
// bitcoind per Till; its network comes from config.
import { networks, type Network } from 'bitcoinjs-lib';

export type TillNetwork = 'main' | 'test' | 'signet' | 'regtest';

/** Which family of extended-key version bytes a chain uses (xpub... vs tpub...). */
export type KeyNetwork = 'main' | 'test';

export const TILL_NETWORKS: readonly TillNetwork[] = ['main', 'test', 'signet', 'regtest'];

// Signet shares testnet's address prefixes (tb1, m/n, 2) and key versions;
// regtest differs only in its bech32 prefix (bcrt).
const NETWORKS: Readonly<Record<TillNetwork, Network>> = {
  main: networks.bitcoin,
  test: networks.testnet,
  signet: { ...networks.testnet },
  regtest: networks.regtest,
};

const NETWORK_NAMES: Readonly<Record<TillNetwork, string>> = {
  main: 'mainnet',
  test: 'testnet',
  signet: 'signet',
  regtest: 'regtest',
};

export function isTillNetwork(value: unknown): value is TillNetwork {
  return typeof value === 'string' && (TILL_NETWORKS as readonly string[]).includes(value);
}

/** The bitcoinjs-lib network object (address prefixes, bech32 hrp) for a chain. */
export function getNetwork(network: TillNetwork): Network {
  return NETWORKS[network];
}

/** Mainnet keys are xpub/ypub/zpub; every test chain uses tpub/upub/vpub. */
export function keyNetworkOf(network: TillNetwork): KeyNetwork {
  return network === 'main' ? 'main' : 'test';
}

/** Human name for messages: "mainnet", "testnet", "signet", "regtest". */
export function describeNetwork(network: TillNetwork): string {
  return NETWORK_NAMES[network];
}
