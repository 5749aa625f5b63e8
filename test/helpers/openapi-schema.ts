import { OPENAPI_DOCUMENT } from '../../src/http/openapi.ts';

// Checks real answers against the OpenAPI document's schemas: every property an
// answer has is documented (with its type), and every one the document requires
// is there. A client generated from the document then reads every answer.

export type Schema = Record<string, any>;
/** The document as plain data, to walk by path and status. */
export const doc = OPENAPI_DOCUMENT as unknown as Schema;

export function resolve(schema: Schema): Schema {
  if (!schema.$ref) return schema;
  const [, , kind, name] = schema.$ref.split('/');
  return resolve(doc.components[kind][name]);
}

/** The documented headers an answer lacks, or carries with a value its schema refuses. */
export function headerProblemsOf(documented: Record<string, Schema>, headers: Headers): string[] {
  return Object.entries(documented).flatMap(([name, ref]) => {
    const header = resolve(ref);
    const value = headers.get(name);
    if (value === null) return header.required ? [`header ${name}: missing`] : [];
    const { schema } = header;
    const ok = schema.const !== undefined ? value === schema.const : !schema.pattern || new RegExp(schema.pattern).test(value);
    return ok && (schema.format !== 'uuid' || /^[0-9a-f-]{36}$/.test(value)) ? [] : [`header ${name}: ${value}`];
  });
}

const IS: Record<string, (v: unknown) => boolean> = {
  string: (v) => typeof v === 'string',
  integer: (v) => Number.isInteger(v),
  number: (v) => typeof v === 'number',
  boolean: (v) => typeof v === 'boolean',
  null: (v) => v === null,
  array: (v) => Array.isArray(v),
  object: (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
};

/** What in `value` the schema does not describe; answers are read as closed (no property the document lacks). */
export function problemsOf(schema: Schema, value: unknown, path = '$'): string[] {
  const s = resolve(schema);
  if (s.oneOf) {
    const matching = (s.oneOf as Schema[]).filter((option) => problemsOf(option, value, path).length === 0).length;
    return matching === 1 ? [] : [`${path}: matches ${matching} of its oneOf`];
  }
  if ('const' in s) return value === s.const ? [] : [`${path}: ${JSON.stringify(value)} is not ${JSON.stringify(s.const)}`];
  if (s.enum && !s.enum.includes(value)) return [`${path}: ${JSON.stringify(value)} is not one of ${s.enum.join(', ')}`];
  if (s.type && ![s.type].flat().some((t: string) => IS[t]!(value))) return [`${path}: ${JSON.stringify(value)} is not ${[s.type].flat().join(' or ')}`];
  const problems: string[] = [];
  if (IS.object!(value)) {
    const o = value as Record<string, unknown>;
    for (const k of s.required ?? []) if (!(k in o)) problems.push(`${path}.${k}: missing`);
    for (const [k, v] of Object.entries(o)) {
      const property = s.properties?.[k] ?? (typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined);
      if (property) problems.push(...problemsOf(property, v, `${path}.${k}`));
      else problems.push(`${path}.${k}: not in the document`);
    }
  }
  if (Array.isArray(value) && s.items) value.forEach((v, i) => problems.push(...problemsOf(s.items, v, `${path}[${i}]`)));
  return problems;
}
