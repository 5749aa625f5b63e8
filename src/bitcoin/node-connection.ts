import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Config, Network } from '../config.ts';
import { readCookieFile, RpcClient, type RpcCredentials } from './rpc-client.ts';

const DEFAULT_RPC_PORT: Record<Network, number> = { main: 8332, test: 18332, signet: 38332, regtest: 18443 };
const DATADIR_SUBDIR: Record<Network, string> = { main: '', test: 'testnet3', signet: 'signet', regtest: 'regtest' };
/** What getblockchaininfo.chain says for each Till network. */
export const CHAIN_NAMES: Record<Network, string[]> = { main: ['main'], test: ['test', 'testnet4'], signet: ['signet'], regtest: ['regtest'] };

export function rpcUrlFor(config: Config): string {
  return config.rpcUrl || `http://127.0.0.1:${DEFAULT_RPC_PORT[config.network]}`;
}

export function cookiePathFor(config: Config): string {
  return config.rpcCookieFile || join(homedir(), '.bitcoin', DATADIR_SUBDIR[config.network], '.cookie');
}

/** User and password when configured, else bitcoind's cookie file, re-read at every request. */
export function createRpcClient(config: Config): RpcClient {
  const credentials: () => RpcCredentials = config.rpcUser
    ? () => ({ user: config.rpcUser, password: config.rpcPassword })
    : () => readCookieFile(cookiePathFor(config));
  return new RpcClient({ url: rpcUrlFor(config), credentials });
}
