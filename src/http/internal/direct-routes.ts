import type { H3 } from 'h3';
import { DirectGets } from './direct-get.ts';
import { DirectPosts, type DirectPostOptions } from './direct-post.ts';

/** The routes an app also answers straight from Node's request (direct-get.ts, direct-post.ts). */
export interface DirectRoutes {
  gets: DirectGets;
  posts: DirectPosts;
}

const registered = new WeakMap<H3, DirectRoutes>();

/** The direct routes of an app, which its routes register into. */
export function createDirectRoutes(app: H3, opts: DirectPostOptions & { whenDurable: (read: () => void) => void | Promise<void> }): DirectRoutes {
  const routes = { gets: new DirectGets(opts.log, opts.whenDurable, opts.errorOf), posts: new DirectPosts(opts) };
  registered.set(app, routes);
  return routes;
}

/** What the server tries on a Node request before handing it to the app. */
export function directRoutesOf(app: H3): DirectRoutes | undefined {
  return registered.get(app);
}
