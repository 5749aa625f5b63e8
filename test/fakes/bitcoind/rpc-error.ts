// Bitcoin Core's RPC error codes (rpc/protocol.h) and the error the method
// table throws; the server renders it as {"code","message"}.
export const RPC_MISC_ERROR = -1;
export const RPC_TYPE_ERROR = -3;
export const RPC_INVALID_ADDRESS_OR_KEY = -5;
export const RPC_INVALID_PARAMETER = -8;
export const RPC_IN_WARMUP = -28;
export const RPC_INVALID_REQUEST = -32600;
export const RPC_METHOD_NOT_FOUND = -32601;
export const RPC_PARSE_ERROR = -32700;

export class RpcError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

/** UniValue's type names, as they appear in Core's type errors. */
export function jsonTypeName(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'object') return 'object';
  return typeof value; // 'string' | 'number'
}

/** UniValue::get_str and friends: Core answers -3 with this message. */
export function typeMismatch(value: unknown, expected: string): RpcError {
  return new RpcError(RPC_TYPE_ERROR, `JSON value of type ${jsonTypeName(value)} is not of expected type ${expected}`);
}
