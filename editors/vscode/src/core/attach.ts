// Whether the extension attaches to a shared compactd (`compactd serve
// --listen`, which an agent in another process also uses) or starts its
// own: the `compactd.server.connect` setting against the discovery file.

import { discoveryPath, liveDiscovery, readDiscovery, type Discovery } from 'compactd-client';

export type ServerChoice =
  | { kind: 'spawn'; why?: string }
  | { kind: 'attach'; url: string; token: string; fallBack: boolean };

export interface DiscoveryReader {
  live(path: string): Discovery | undefined;
  read(path: string): Discovery | undefined;
}

const FILES: DiscoveryReader = { live: liveDiscovery, read: readDiscovery };

/**
 * `off`: start compactd. `auto`: attach when the discovery file names a
 * running server (falling back to starting one if attaching fails), else
 * start compactd. A `ws://` URL: attach to it, with the token from
 * `COMPACTD_TOKEN` or the discovery file; no fallback.
 */
export function chooseServer(setting: string | undefined, env: NodeJS.ProcessEnv = process.env, files: DiscoveryReader = FILES): ServerChoice {
  const value = (setting ?? 'off').trim();
  if (value === '' || value === 'off') return { kind: 'spawn' };
  const path = discoveryPath(env);
  if (value === 'auto') {
    const found = files.live(path);
    return found ? { kind: 'attach', url: found.url, token: found.token, fallBack: true } : { kind: 'spawn', why: `no shared compactd (${path})` };
  }
  if (!value.startsWith('ws://')) {
    throw new Error(`compactd.server.connect must be "off", "auto" or a ws:// URL, not ${JSON.stringify(value)}`);
  }
  const token = env.COMPACTD_TOKEN ?? files.read(path)?.token;
  if (!token) throw new Error(`no token for ${value}: set COMPACTD_TOKEN or start the server so that ${path} holds its token`);
  return { kind: 'attach', url: value, token, fallBack: false };
}
