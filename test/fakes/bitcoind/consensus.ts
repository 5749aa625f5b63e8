// Regtest consensus facts (Bitcoin Core's kernel/chainparams.cpp and
// node/miner.cpp) and the block builder. Blocks built here are what
// `generatetoaddress` on a real regtest node would build: BIP34 height in the
// coinbase, witness commitment, valid merkle roots, proof of work at 0x207fffff.
import * as bitcoin from 'bitcoinjs-lib';
import * as ecc from 'tiny-secp256k1';

// Taproot addresses need an ECC backend to be parsed; every part of Till
// registers the same one.
bitcoin.initEccLib(ecc);

export const NETWORK = bitcoin.networks.regtest;
export const GENESIS_HASH = '0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206';
export const REGTEST_BITS = 0x207fffff;
/** VERSIONBITS_TOP_BITS: what Core's miner puts in nVersion when nothing signals. */
export const BLOCK_VERSION = 0x20000000;
export const COINBASE_MATURITY = 100;
export const SATS_PER_BTC = 100_000_000n;
/** Work of one block at regtest's pow limit: 2^256 / (target + 1) = 2. */
export const WORK_PER_BLOCK = 2n;
const HALVING_INTERVAL = 150;
const MAX_SEQUENCE_NONFINAL = 0xfffffffe;
const WITNESS_COMMITMENT_HEADER = Uint8Array.from([0xaa, 0x21, 0xa9, 0xed]);

export function blockSubsidy(height: number): bigint {
  const halvings = Math.floor(height / HALVING_INTERVAL);
  return halvings >= 64 ? 0n : (50n * SATS_PER_BTC) >> BigInt(halvings);
}

/** The real regtest genesis block (CreateGenesisBlock(1296688602, 2, 0x207fffff, 1, 50 BTC)). */
export function buildGenesisBlock(): bitcoin.Block {
  const coinbase = new bitcoin.Transaction();
  coinbase.version = 1;
  coinbase.addInput(
    new Uint8Array(32),
    0xffffffff,
    0xffffffff,
    Buffer.from(
      '04ffff001d0104455468652054696d65732030332f4a616e2f32303039204368616e63656c6c6f72206f6e206272696e6b206f66207365636f6e64206261696c6f757420666f722062616e6b73',
      'hex',
    ),
  );
  coinbase.addOutput(
    Buffer.from(
      '4104678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5fac',
      'hex',
    ),
    50n * SATS_PER_BTC,
  );
  const block = new bitcoin.Block();
  block.version = 1;
  block.prevHash = new Uint8Array(32);
  block.timestamp = 1296688602;
  block.bits = REGTEST_BITS;
  block.nonce = 2;
  block.transactions = [coinbase];
  block.merkleRoot = bitcoin.Block.calculateMerkleRoot([coinbase]);
  if (block.getId() !== GENESIS_HASH) throw new Error('fake bitcoind: regtest genesis does not hash to the known value');
  return block;
}

export interface BlockTemplate {
  prevHash: string;
  height: number;
  /** Seconds since the epoch, already raised above the median time past. */
  time: number;
  coinbaseScript: Uint8Array;
  /** Sum of the fees of `txs`. */
  fees: bigint;
  txs: bitcoin.Transaction[];
  /** Pushed after the height in the coinbase scriptSig, as miners add their extra nonce. */
  extraNonce?: number | undefined;
}

/**
 * Builds a block the way Core's BlockAssembler does: coinbase version 2,
 * scriptSig `<height>` (plus OP_0 up to height 16), nSequence 0xfffffffe,
 * nLockTime height-1, one output with subsidy + fees, then the witness
 * commitment output with a 32-byte zero witness reserved value. The nonce is
 * ground until the header meets the regtest target (about two tries).
 */
export function buildBlock(t: BlockTemplate): bitcoin.Block {
  const coinbase = new bitcoin.Transaction();
  coinbase.version = 2;
  coinbase.locktime = t.height - 1;
  const heightPush: Array<number | Uint8Array> = [bitcoin.script.number.encode(t.height)];
  if (t.extraNonce !== undefined) heightPush.push(bitcoin.script.number.encode(t.extraNonce));
  else if (t.height <= 16) heightPush.push(bitcoin.opcodes.OP_0);
  coinbase.addInput(new Uint8Array(32), 0xffffffff, MAX_SEQUENCE_NONFINAL, bitcoin.script.compile(heightPush));
  coinbase.setWitness(0, [new Uint8Array(32)]);
  coinbase.addOutput(t.coinbaseScript, blockSubsidy(t.height) + t.fees);

  const txs = [coinbase, ...t.txs];
  // The coinbase's wtxid counts as zero, so the commitment can be computed
  // before its output is added.
  const commitment = bitcoin.Block.calculateMerkleRoot(txs, true);
  coinbase.addOutput(
    bitcoin.script.compile([bitcoin.opcodes.OP_RETURN, concatBytes(WITNESS_COMMITMENT_HEADER, commitment)]),
    0n,
  );

  const block = new bitcoin.Block();
  block.version = BLOCK_VERSION;
  block.prevHash = reverseHex(t.prevHash);
  block.timestamp = t.time;
  block.bits = REGTEST_BITS;
  block.transactions = txs;
  block.witnessCommit = commitment;
  block.merkleRoot = bitcoin.Block.calculateMerkleRoot(txs);
  for (block.nonce = 0; !block.checkProofOfWork(); block.nonce++);
  return block;
}

/** Bytes of a hash shown in RPC order (reversed), as stored inside blocks and transactions. */
export function reverseHex(hex: string): Uint8Array {
  return Buffer.from(hex, 'hex').reverse();
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

function concatBytes(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}
