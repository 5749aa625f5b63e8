// JSON renderings shared by getblock, getrawtransaction and scantxoutset,
// field for field as core_io.cpp writes them (TxToUniv, ScriptToUniv).
import * as bitcoin from 'bitcoinjs-lib';
import type { Coin } from './chain.ts';
import { SATS_PER_BTC, toHex } from './consensus.ts';
import { inferDescriptor, payToPubkeyKey, scriptAddress } from './descriptor.ts';

const rawJSON = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;

/**
 * A BTC amount exactly as Core prints it (ValueFromAmount): a JSON number
 * with 8 decimals, e.g. 0.00100000. JSON.rawJSON keeps the digits, so a
 * client parsing the source text sees the same characters as from bitcoind.
 */
export function btcAmount(sats: bigint): unknown {
  const sign = sats < 0n ? '-' : '';
  const abs = sats < 0n ? -sats : sats;
  return rawJSON(`${sign}${abs / SATS_PER_BTC}.${(abs % SATS_PER_BTC).toString().padStart(8, '0')}`);
}

const OP_NAMES = new Map<number, string>();
for (const [name, code] of Object.entries(bitcoin.opcodes)) if (typeof code === 'number' && !OP_NAMES.has(code)) OP_NAMES.set(code, name);
// Core's GetOpName spells these differently from bitcoinjs's first alias.
OP_NAMES.set(bitcoin.opcodes.OP_CHECKLOCKTIMEVERIFY, 'OP_CHECKLOCKTIMEVERIFY');
OP_NAMES.set(bitcoin.opcodes.OP_CHECKSEQUENCEVERIFY, 'OP_CHECKSEQUENCEVERIFY');

/** ScriptToAsmStr without sighash decoding: pushes of up to 4 bytes as numbers, OP_0..OP_16 as digits. */
export function scriptAsm(script: Uint8Array): string {
  const chunks = bitcoin.script.decompile(script);
  if (!chunks) return '[error]';
  return chunks
    .map((chunk) => {
      if (chunk instanceof Uint8Array) return chunk.length <= 4 ? String(bitcoin.script.number.decode(Buffer.from(chunk), 4, false)) : toHex(chunk);
      if (chunk === bitcoin.opcodes.OP_0) return '0';
      if (chunk === bitcoin.opcodes.OP_1NEGATE) return '-1';
      if (chunk >= bitcoin.opcodes.OP_1 && chunk <= bitcoin.opcodes.OP_16) return String(chunk - bitcoin.opcodes.OP_1 + 1);
      return OP_NAMES.get(chunk) ?? 'OP_UNKNOWN';
    })
    .join(' ');
}

/** Core's GetTxnOutputType names. */
export function outputType(script: Uint8Array): string {
  if (payToPubkeyKey(script)) return 'pubkey';
  const hex = toHex(script);
  if (/^76a914[0-9a-f]{40}88ac$/.test(hex)) return 'pubkeyhash';
  if (/^a914[0-9a-f]{40}87$/.test(hex)) return 'scripthash';
  if (hex === '51024e73') return 'anchor';
  const isWitness =
    script.length >= 4 && script.length <= 42 && (script[0] === 0 || (script[0]! >= 0x51 && script[0]! <= 0x60)) && script[1] === script.length - 2;
  if (isWitness) {
    const program = script.length - 2;
    if (script[0] === 0) return program === 20 ? 'witness_v0_keyhash' : program === 32 ? 'witness_v0_scripthash' : 'nonstandard';
    return script[0] === 0x51 && program === 32 ? 'witness_v1_taproot' : 'witness_unknown';
  }
  if (script[0] === bitcoin.opcodes.OP_RETURN) {
    const rest = bitcoin.script.decompile(script.subarray(1));
    return rest && rest.every((c) => c instanceof Uint8Array || c <= bitcoin.opcodes.OP_16) ? 'nulldata' : 'nonstandard';
  }
  return 'nonstandard';
}

/** ScriptToUniv(script, include_hex, include_address): asm, desc, hex, address (not for P2PK), type. */
export function scriptPubKeyJson(script: Uint8Array): Record<string, unknown> {
  const type = outputType(script);
  const json: Record<string, unknown> = { asm: scriptAsm(script), desc: inferDescriptor(script), hex: toHex(script) };
  const address = type === 'pubkey' ? undefined : scriptAddress(script);
  if (address) json.address = address;
  json.type = type;
  return json;
}

/** The witness txid in RPC byte order. bitcoinjs's getHash(true) zeroes the coinbase's (a merkle-tree convention); Core does not. */
export function wtxid(tx: bitcoin.Transaction): string {
  return toHex(Uint8Array.from(bitcoin.crypto.hash256(tx.toBuffer())).reverse());
}

export interface TxJsonOptions {
  /** Spent coins in input order (block undo data); adds `fee`, and `prevout` when `prevouts`. */
  undo?: Coin[] | undefined;
  prevouts?: boolean;
}

/** TxToUniv: txid … vout, fee (with undo data), hex. */
export function txJson(tx: bitcoin.Transaction, opts: TxJsonOptions = {}): Record<string, unknown> {
  const coinbase = tx.isCoinbase();
  const undo = coinbase ? undefined : opts.undo;
  const vin = tx.ins.map((input, i) => {
    const json: Record<string, unknown> = {};
    if (coinbase) {
      json.coinbase = toHex(input.script);
    } else {
      json.txid = toHex(Uint8Array.from(input.hash).reverse());
      json.vout = input.index;
      json.scriptSig = { asm: scriptAsm(input.script), hex: toHex(input.script) };
    }
    if (input.witness.length > 0) json.txinwitness = input.witness.map(toHex);
    const coin = undo?.[i];
    if (coin && opts.prevouts) {
      json.prevout = { generated: coin.coinbase, height: coin.height, value: btcAmount(coin.value), scriptPubKey: scriptPubKeyJson(coin.script) };
    }
    json.sequence = input.sequence;
    return json;
  });
  const json: Record<string, unknown> = {
    txid: tx.getId(),
    hash: wtxid(tx),
    version: tx.version,
    size: tx.byteLength(),
    vsize: tx.virtualSize(),
    weight: tx.weight(),
    locktime: tx.locktime,
    vin,
    vout: tx.outs.map((out, n) => ({ value: btcAmount(out.value), n, scriptPubKey: scriptPubKeyJson(out.script) })),
  };
  if (undo) {
    const totalIn = undo.reduce((sum, c) => sum + c.value, 0n);
    json.fee = btcAmount(totalIn - tx.outs.reduce((sum, o) => sum + o.value, 0n));
  }
  json.hex = tx.toHex();
  return json;
}
