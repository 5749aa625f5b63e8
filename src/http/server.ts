import { serve } from 'crossws/server';
import type { H3 } from 'h3';

export interface HttpServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Serves the app on a real socket (crossws's serve also upgrades WebSockets). */
export async function listen(app: H3, host: string, port: number): Promise<HttpServer> {
  const server = serve({ fetch: app.fetch, hostname: host, port, silent: true, gracefulShutdown: false });
  await server.ready();
  const address = server.node?.server?.address();
  const boundPort = typeof address === 'object' && address ? address.port : port;
  const h = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${h}:${boundPort}`,
    port: boundPort,
    close: () => server.close(true),
  };
}
