// The fake node's own wallet: one P2WPKH key that receives every coinbase and
// all change. Transactions are version 2, anti-fee-sniping nLockTime = tip
// height, and carry real ECDSA signatures (tiny-secp256k1 signs; no ecpair
// needed), so they would also be valid on a real node.
import * as bitcoin from 'bitcoinjs-lib';
import * as ecc from 'tiny-secp256k1';
import type { Coin } from './chain.ts';
import { NETWORK } from './consensus.ts';

export interface TxOutputSpec {
  script: Uint8Array;
  value: bigint;
}

export interface BuiltTx {
  tx: bitcoin.Transaction;
  fee: bigint;
  /** Coins spent, in input order. */
  coins: Coin[];
  /** Outputs other than change, in order. */
  payments: TxOutputSpec[];
}

export interface BuildRequest {
  payments: TxOutputSpec[];
  /** Fee for a transaction of `vsize` virtual bytes. */
  feeFor: (vsize: number) => bigint;
  rbf: boolean;
  locktime: number;
}

const SEQUENCE_RBF = 0xfffffffd;
const SEQUENCE_FINAL_LOCKTIME = 0xfffffffe;
const DUMMY_SIGNATURE = new Uint8Array(72);
// Core's DUST_RELAY_TX_FEE, in sat per 1000 vbytes.
const DUST_RELAY_FEE_PER_KVB = 3000;

/** BIP125 opt-in: some input with nSequence below 0xfffffffe. */
export function signalsRbf(tx: bitcoin.Transaction): boolean {
  return tx.ins.some((input) => input.sequence < SEQUENCE_FINAL_LOCKTIME);
}

/** Output script of a regtest address (bcrt1q…, bcrt1p…, 2…, m…/n…); throws a clear error otherwise. */
export function addressToScript(address: string): Uint8Array {
  if (typeof address !== 'string' || address.length === 0) throw new TypeError('address must be a non-empty string');
  try {
    return bitcoin.address.toOutputScript(address, NETWORK);
  } catch {
    throw new TypeError(`not a regtest address: ${address}`);
  }
}

/** Core's GetDustThreshold at the default dust relay fee (294 sat for P2WPKH, 546 for P2PKH, 330 for P2TR). */
export function dustThreshold(script: Uint8Array): bigint {
  const outputSize = 8 + compactSizeLength(script.length) + script.length;
  const isWitnessProgram =
    script.length >= 4 && script.length <= 42 && (script[0] === 0 || (script[0]! >= 0x51 && script[0]! <= 0x60)) && script[1] === script.length - 2;
  // Spending input size: outpoint 36 + script length 1 + sequence 4 + (witness discounted 107/4 | scriptSig 107).
  const inputSize = isWitnessProgram ? 32 + 4 + 1 + Math.floor(107 / 4) + 4 : 32 + 4 + 1 + 107 + 4;
  return BigInt(Math.floor(((outputSize + inputSize) * DUST_RELAY_FEE_PER_KVB) / 1000));
}

function compactSizeLength(n: number): number {
  return n < 0xfd ? 1 : n <= 0xffff ? 3 : 5;
}

export class Wallet {
  readonly #privateKey: Uint8Array;
  readonly #publicKey: Uint8Array;
  readonly script: Uint8Array;
  readonly address: string;
  readonly #scriptCode: Uint8Array;

  constructor(seed: string) {
    this.#privateKey = bitcoin.crypto.sha256(new TextEncoder().encode(seed));
    const publicKey = ecc.pointFromScalar(this.#privateKey, true);
    if (!publicKey) throw new Error('fake bitcoind: wallet seed gives an invalid key');
    this.#publicKey = publicKey;
    const payment = bitcoin.payments.p2wpkh({ pubkey: publicKey, network: NETWORK });
    this.script = payment.output!;
    this.address = payment.address!;
    this.#scriptCode = bitcoin.payments.p2pkh({ hash: payment.hash! }).output!;
  }

  isMine(script: Uint8Array): boolean {
    return Buffer.compare(script, this.script) === 0;
  }

  /**
   * Funds `payments` from `spendable` (largest coins first, as few as
   * possible), adds change when it is above dust, and signs.
   */
  fund(spendable: Coin[], req: BuildRequest): BuiltTx {
    const sorted = [...spendable].sort((a, b) => (a.value === b.value ? a.height - b.height : a.value > b.value ? -1 : 1));
    for (let n = 1; n <= sorted.length; n++) {
      const built = this.tryBuild(sorted.slice(0, n), req);
      if (built) return built;
    }
    throw new Error('fake bitcoind wallet: not enough mature funds (mine more blocks)');
  }

  /** Spends exactly `coins`; null when they cannot pay outputs plus fee. */
  tryBuild(coins: Coin[], req: BuildRequest): BuiltTx | null {
    const totalIn = coins.reduce((sum, c) => sum + c.value, 0n);
    const totalOut = req.payments.reduce((sum, p) => sum + p.value, 0n);
    const withChange = this.#assemble(coins, [...req.payments, { script: this.script, value: 0n }], req);
    const feeWithChange = req.feeFor(withChange.virtualSize());
    const change = totalIn - totalOut - feeWithChange;
    if (change >= dustThreshold(this.script)) {
      withChange.outs[withChange.outs.length - 1]!.value = change;
      return this.#sign(withChange, coins, feeWithChange, req.payments);
    }
    const noChange = this.#assemble(coins, req.payments, req);
    if (req.payments.length === 0 || totalIn - totalOut < req.feeFor(noChange.virtualSize())) return null;
    // Change below dust goes to the fee, as Core's wallet does.
    return this.#sign(noChange, coins, totalIn - totalOut, req.payments);
  }

  #assemble(coins: Coin[], outputs: TxOutputSpec[], req: BuildRequest): bitcoin.Transaction {
    const tx = new bitcoin.Transaction();
    tx.version = 2;
    tx.locktime = req.locktime;
    const sequence = req.rbf ? SEQUENCE_RBF : SEQUENCE_FINAL_LOCKTIME;
    coins.forEach((coin, i) => {
      tx.addInput(Buffer.from(coin.txid, 'hex').reverse(), coin.vout, sequence);
      tx.setWitness(i, [DUMMY_SIGNATURE, this.#publicKey]);
    });
    for (const out of outputs) tx.addOutput(out.script, out.value);
    return tx;
  }

  #sign(tx: bitcoin.Transaction, coins: Coin[], fee: bigint, payments: TxOutputSpec[]): BuiltTx {
    coins.forEach((coin, i) => {
      const sighash = tx.hashForWitnessV0(i, this.#scriptCode, coin.value, bitcoin.Transaction.SIGHASH_ALL);
      const signature = bitcoin.script.signature.encode(ecc.sign(sighash, this.#privateKey), bitcoin.Transaction.SIGHASH_ALL);
      tx.setWitness(i, [signature, this.#publicKey]);
    });
    return { tx, fee, coins, payments };
  }
}
