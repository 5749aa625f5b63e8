import { build, type Plugin } from 'esbuild';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const EMBEDDED = join(ROOT, 'src/embedded.ts');
const require = createRequire(import.meta.url);

// A Node SEA runs one CommonJS script, so the bundle is CommonJS. ESM code in
// it that reads import.meta.url (crossws's bundled ws calls
// createRequire(import.meta.url)) would get undefined and fail only when it
// runs: the banner gives it the file URL of the executable instead.
const IMPORT_META_URL = '__till_import_meta_url';
const BANNER = `var ${IMPORT_META_URL} = require('node:url').pathToFileURL(__filename).href;`;

/** Bundles the CLI (and with it the whole server) into one CommonJS file. */
export async function bundleApp(outfile: string): Promise<void> {
  const hits: Record<string, number> = {};
  await build({
    entryPoints: [join(ROOT, 'cli/till.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: `node${process.versions.node.split('.')[0]}`,
    banner: { js: BANNER },
    define: { 'import.meta.url': IMPORT_META_URL },
    loader: { '.wasm': 'binary' },
    plugins: [swapAddonLoaders(hits), inlineSecp256k1Wasm(hits)],
    logLevel: 'error',
  });
  // Each rewrite is needed at run time: a package update that moved the
  // files must stop the build, not ship a binary that fails on first use.
  for (const name of [...ADDON_LOADERS.map((l) => l.name), 'tiny-secp256k1']) {
    if (hits[name] !== 1) throw new Error(`${name}: expected to rewrite one of its files, rewrote ${hits[name] ?? 0}: has the package's layout changed?`);
  }
}

/**
 * better-sqlite3 as one CommonJS file, for the database thread: a worker
 * started from source text requires it by path, outside the app bundle.
 */
export async function bundleSqliteDriver(outfile: string): Promise<void> {
  await build({
    entryPoints: [require.resolve('better-sqlite3')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: `node${process.versions.node.split('.')[0]}`,
    // Its addon lookup requires computed paths (the thread passes nativeBinding instead).
    logLevel: 'error',
  });
}

// Each package finds its native addon under node_modules when it loads: in
// the bundle, the module that does it is swapped for one taking the binary's.
const ADDON_LOADERS = [
  {
    name: 'zeromq',
    filter: /[\\/]zeromq[\\/]lib[\\/]load-addon\.js$/,
    contents: `export default loadNativeAddon('zeromq');`,
  },
  {
    // getBinding(nativeBinding): better-sqlite3 hands it the constructor's option.
    name: 'better-sqlite3',
    filter: /[\\/]better-sqlite3[\\/]lib[\\/]binding\.js$/,
    contents: `export const getBinding = (given) => (given !== null && typeof given === 'object' ? given : loadNativeAddon('better-sqlite3'));`,
  },
];

function swapAddonLoaders(hits: Record<string, number>): Plugin {
  return {
    name: 'swap-addon-loaders',
    setup(b) {
      for (const loader of ADDON_LOADERS) {
        b.onLoad({ filter: loader.filter }, () => {
          hits[loader.name] = (hits[loader.name] ?? 0) + 1;
          return { contents: `import { loadNativeAddon } from ${JSON.stringify(EMBEDDED)};\n${loader.contents}\n`, loader: 'js', resolveDir: ROOT };
        });
      }
    },
  };
}

/** tiny-secp256k1 reads its .wasm next to its own file at load: in the bundle the bytes are inlined. */
function inlineSecp256k1Wasm(hits: Record<string, number>): Plugin {
  const read = /^const binary = .*readFileSync.*"secp256k1\.wasm".*$/m;
  return {
    name: 'inline-secp256k1-wasm',
    setup(b) {
      b.onLoad({ filter: /[\\/]tiny-secp256k1[\\/]lib[\\/](cjs[\\/])?wasm_loader\.c?js$/ }, (args) => {
        const source = readFileSync(args.path, 'utf8');
        if (!read.test(source)) throw new Error(`${args.path} no longer reads secp256k1.wasm as expected`);
        hits['tiny-secp256k1'] = (hits['tiny-secp256k1'] ?? 0) + 1;
        const wasm = JSON.stringify(join(dirname(args.path), args.path.endsWith('.cjs') ? '..' : '.', 'secp256k1.wasm'));
        // The binary loader's module is the bytes themselves (module.exports), in both module systems.
        return { contents: source.replace(read, `const binary = require(${wasm});`), loader: 'js', resolveDir: dirname(args.path) };
      });
    },
  };
}
