// compactd as pi's compaction engine. Load it with `pi -e <this directory>`
// or from pi's extensions directory (see README.md).
//
// pi events → what happens:
//   session_start          start compactd, import or open pi's session (Bridge.start)
//   message_end, turn_end  append what pi recorded, so compactd's meter is current
//   agent_start, model_select   declare the model, system prompt and tools
//   session_before_compact compactd compacts; its summary and cut become pi's compaction
//   session_compact        ours confirmed; pi's own → re-import
//   session_tree           follow the branch (re-import when it left compactd's)
//   session_shutdown       close compactd (a compaction pi runs after it starts compactd again)
//   /compactd              the meter, a preview of the next compaction, the last summary

import { join } from 'node:path';
import type { ExtensionAPI, ExtensionContext } from '@mariozechner/pi-coding-agent';
import { Bridge, readState, type Level, type PiSide, type PiState } from './bridge';
import { statusText } from './format';
import { loadSettings } from './settings';
import { shapeOf, trace } from './shapes';

/** Where a bundled `bin/compactd` would be: beside src/. */
const EXTENSION_DIR = join(__dirname, '..');

// The single-file build `compactd setup pi` writes (`npm run bundle`:
// dist/compactd-pi.js, carried by the binary) has the compactd that wrote
// it here, so pi runs the same compactd (`compactd` when PATH finds it).
// In this source tree, loaded as TypeScript, it is not defined.
declare const COMPACTD_SETUP_PATH: string | undefined;
const SETUP_PATH = typeof COMPACTD_SETUP_PATH === 'string' ? COMPACTD_SETUP_PATH : undefined;

export default function compactdExtension(pi: ExtensionAPI): void {
  let bridge: Bridge | undefined;
  // The newest context pi handed us: notices and the footer go through it.
  let current: ExtensionContext | undefined;

  const notify = (text: string, level: Level) => {
    trace('notice', () => ({ text, level }));
    try {
      if (current?.hasUI) {
        current.ui.notify(text, level);
        return;
      }
    } catch {
      // A context pi has invalidated: stderr instead.
    }
    process.stderr.write(`${text}\n`);
  };
  const side: PiSide = {
    notify,
    status(meter) {
      try {
        if (current?.hasUI) current.ui.setStatus('compactd', statusText(meter));
      } catch {
        // Invalidated context: the next event brings a current one.
      }
    },
  };
  // The newest state read: pi's print mode invalidates the context before
  // its last automatic compaction, whose event then brings only the branch.
  let lastState: PiState | undefined;
  /** pi's session as this event sees it, read before anything awaits; undefined when pi has invalidated the context. */
  const state = (ctx: ExtensionContext): PiState | undefined => {
    try {
      const active = new Set(pi.getActiveTools());
      const tools = pi
        .getAllTools()
        .filter((tool) => active.has(tool.name))
        .map(({ name, description, parameters }) => ({ name, description, parameters }));
      lastState = readState(ctx, tools);
      return lastState;
    } catch (e) {
      trace('stale context', () => (e as Error).message);
      return undefined;
    }
  };
  /** Runs `action` with the event's state, when pi's context is still valid. */
  const withState = async (ctx: ExtensionContext, action: (b: Bridge, s: PiState) => Promise<void>) => {
    current = ctx;
    const s = state(ctx);
    if (bridge && s) await action(bridge, s);
  };

  pi.on('session_start', async (event, ctx) => {
    current = ctx;
    trace('session_start', () => shapeOf(event));
    const { settings, problems } = loadSettings(ctx.cwd);
    for (const problem of problems) notify(`compactd settings: ${problem}`, 'warning');
    bridge = new Bridge({ ...settings, path: settings.path ?? SETUP_PATH }, EXTENSION_DIR, side);
    await withState(ctx, (b, s) => b.start(s));
  });

  pi.on('message_end', (event, ctx) => {
    current = ctx;
    trace('message_end', () => shapeOf(event, 6));
    // pi records the message in its session right after the handlers return.
    setImmediate(() => void withState(ctx, (b, s) => b.sync(s)));
  });
  pi.on('turn_end', (_event, ctx) => withState(ctx, (b, s) => b.sync(s)));
  pi.on('agent_start', (_event, ctx) => withState(ctx, (b, s) => b.declare(s)));
  pi.on('model_select', (_event, ctx) => withState(ctx, (b, s) => b.declare(s)));
  pi.on('session_tree', (_event, ctx) => withState(ctx, (b, s) => b.sync(s)));

  pi.on('session_before_compact', async (event, ctx) => {
    current = ctx;
    trace('session_before_compact', () => shapeOf(event, 5));
    const s = state(ctx) ?? (lastState && { ...lastState, branch: event.branchEntries });
    const result = bridge && s ? await bridge.compact(event, s) : undefined;
    trace('session_before_compact result', () => result ?? null);
    return result;
  });
  pi.on('session_compact', async (event, ctx) => {
    trace('session_compact', () => shapeOf(event, 3));
    await withState(ctx, (b, s) => b.compacted(event.compactionEntry, s));
  });

  // pi's print mode shuts the session down before its last automatic
  // compaction runs: the bridge closes compactd but stays, and starts it
  // again for a compaction that comes after.
  pi.on('session_shutdown', async () => {
    await bridge?.close();
  });

  pi.registerCommand('compactd', {
    description: 'compactd: the meter, a preview of the next compaction, the last summary',
    handler: async (_args, ctx) => {
      current = ctx;
      const s = state(ctx);
      const text = bridge && s ? await bridge.report(s).catch((e: Error) => `compactd: ${e.message}`) : 'compactd: no session yet';
      if (ctx.hasUI) ctx.ui.notify(text, 'info');
      else process.stdout.write(`${text}\n`);
    },
  });
}
