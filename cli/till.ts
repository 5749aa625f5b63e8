#!/usr/bin/env -S node --max-semi-space-size=8
import { SecretKeyError } from '../src/auth/secret-box.ts';
import { ConfigError } from '../src/config.ts';
import { DataDirError } from '../src/db/connection.ts';
import { SchemaTooNewError, SchemaUpgradeError } from '../src/db/migrate.ts';
import { ApiError } from '../src/domain/errors.ts';
import { LeaseHeldError } from '../src/services/server-lease.ts';
import { fail } from './output.ts';
import { buildProgram } from './program.ts';

// A promise chain, not a top-level await: the single binary runs this as CommonJS.
buildProgram()
  .parseAsync(process.argv)
  .catch((err: unknown) => {
    if (err instanceof ApiError || err instanceof ConfigError || err instanceof SchemaTooNewError || err instanceof SchemaUpgradeError || err instanceof DataDirError || err instanceof LeaseHeldError || err instanceof SecretKeyError) fail(err.message);
    const code = (err as NodeJS.ErrnoException).code;
    // Most often a command run as another user (root, say) left files the service's user cannot open.
    if (code === 'SQLITE_CANTOPEN' || code === 'SQLITE_READONLY') fail(`database: ${(err as Error).message}: can this user read and write the data directory and every file in it?`);
    if (code === 'SQLITE_BUSY' || code === 'SQLITE_NOTADB') fail(`database: ${(err as Error).message}`);
    // The same, met by a file call (till.db made in a folder this user cannot write, till.toml, secret.key).
    if (code === 'EACCES' || code === 'EPERM') fail(`cannot open ${(err as NodeJS.ErrnoException).path ?? 'a file'} (${code}): can this user read and write the data directory and every file in it?`);
    fail(`unexpected error: ${(err as Error).message}`);
  });
