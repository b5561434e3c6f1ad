// VS Code settings → the server's configuration object. No `vscode` here.

import { SERVER_SETTING_KEYS } from '../protocol/settings.generated';

/**
 * The configuration sent as `initializationOptions` and in
 * `workspace/didChangeConfiguration`: only the settings the user set
 * (`explicit` returns undefined for the others), so that `compactd.toml`
 * still fills in what VS Code leaves unset. Dotted keys nest:
 * `summarizer.provider` → `{summarizer: {provider}}`.
 */
export function serverConfiguration(explicit: (key: string) => unknown): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  for (const key of SERVER_SETTING_KEYS) {
    const value = explicit(key);
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
