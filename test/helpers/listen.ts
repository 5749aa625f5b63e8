import type { AddressInfo, Server } from 'node:net';

/** Listens on a free loopback port (an HTTP server or a plain TCP one); resolves with its base URL. */
export async function listenOnLoopback(server: Server): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
