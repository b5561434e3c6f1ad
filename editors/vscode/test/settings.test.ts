import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { EXTENSION_DEFAULTS, serverConfiguration } from '../src/core/settings';
import { SERVER_SETTING_KEYS } from '../src/protocol/settings.generated';
import { PACKAGE_ROOT } from './support/server';

test('only explicitly set settings are sent, dotted keys nested', () => {
  const set: Record<string, unknown> = { keepRecentTokens: 30000, autoCompact: false, 'summarizer.provider': 'test', 'summarizer.delayMs': 5 };
  assert.deepEqual(serverConfiguration((k) => set[k], {}), {
    keepRecentTokens: 30000,
    autoCompact: false,
    summarizer: { provider: 'test', delayMs: 5 },
  });
  assert.deepEqual(serverConfiguration(() => undefined, {}), {});
});

test('the extension follows agents unless the user says otherwise; package.json declares that default', () => {
  assert.deepEqual(serverConfiguration(() => undefined), { follow: 'auto' });
  assert.deepEqual(serverConfiguration((k) => ({ follow: 'off' })[k]), { follow: 'off' });
  const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8'));
  for (const [key, value] of Object.entries(EXTENSION_DEFAULTS)) {
    assert.equal(pkg.contributes.configuration.properties[`compactd.${key}`].default, value, key);
  }
});

test('settings the server does not know are not sent', () => {
  assert.deepEqual(serverConfiguration((k) => ({ 'server.path': '/x', 'meter.warningPercent': 5 })[k], {}), {});
});

test('package.json declares every server setting, under compactd.*', () => {
  const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8'));
  const declared = Object.keys(pkg.contributes.configuration.properties);
  for (const key of SERVER_SETTING_KEYS) assert.ok(declared.includes(`compactd.${key}`), key);
  for (const own of ['compactd.server.path', 'compactd.meter.warningPercent', 'compactd.meter.errorPercent']) assert.ok(declared.includes(own), own);
});
