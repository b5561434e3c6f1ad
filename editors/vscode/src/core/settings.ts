// VS Code settings → the server's configuration object. No `vscode` here.

import { SERVER_SETTING_KEYS } from '../protocol/settings.generated';

/**
 * Server settings whose default differs in VS Code (package.json declares
 * the same defaults, from extension-settings.json): an editor user runs
 * agents in a terminal, so the extension follows them unless told not to.
 * The server's own default stays `off`, for servers an agent launches.
 */
export const EXTENSION_DEFAULTS: Readonly<Record<string, unknown>> = { follow: 'auto' };

/**
 * The configuration sent as `initializationOptions` and in
 * `workspace/didChangeConfiguration`: only the settings the user set
 * (`explicit` returns undefined for the others), so that `compactd.toml`
 * still fills in what VS Code leaves unset, except the extension's own
 * defaults (`EXTENSION_DEFAULTS`), which are sent unless the user set them.
 * Dotted keys nest: `summarizer.provider` → `{summarizer: {provider}}`.
 */
export function serverConfiguration(
  explicit: (key: string) => unknown,
  defaults: Readonly<Record<string, unknown>> = EXTENSION_DEFAULTS,
): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  for (const key of SERVER_SETTING_KEYS) {
    const value = explicit(key) ?? defaults[key];
    if (value === undefined) continue;
    const path = key.split('.');
    let node = config;
    for (const part of path.slice(0, -1)) {
      node = (node[part] ??= {}) as Record<string, unknown>;
    }
    node[path[path.length - 1]] = value;
  }
  return config;
}
