// What the extension relies on in pi's events, checked at run time: a pi
// version that changed a shape makes the extension step aside (pi's own
// compaction runs, with a notice naming the field) instead of writing a
// wrong compaction. With `COMPACTD_PI_TRACE=<file>` every event the
// extension handles is logged there as the shape it had (types, not
// values), which the tests assert against the real pi.

import { appendFileSync } from 'node:fs';

/** The type tree of a value: primitives by `typeof`, Sets as `Set<…>`, arrays by their distinct element shapes. */
export function shapeOf(value: unknown, depth = 4): unknown {
  if (value === null) return 'null';
  if (value instanceof Set) return `Set<${[...new Set([...value].map((v) => typeof v))].join('|') || 'empty'}>`;
  if (typeof AbortSignal !== 'undefined' && value instanceof AbortSignal) return 'AbortSignal';
  if (Array.isArray(value)) {
    if (depth === 0) return 'array';
    const shapes = new Map<string, unknown>();
    for (const v of value) {
      const s = shapeOf(v, depth - 1);
      shapes.set(JSON.stringify(s), s);
    }
    return [...shapes.values()];
  }
  if (typeof value === 'object') {
    if (depth === 0) return 'object';
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, shapeOf(v, depth - 1)]));
  }
  return typeof value;
}

/** Logs `shape()` under `event` when COMPACTD_PI_TRACE names a file; computes nothing otherwise. */
export function trace(event: string, shape: () => unknown): void {
  const file = process.env.COMPACTD_PI_TRACE;
  if (file) appendFileSync(file, JSON.stringify({ event, shape: shape() }) + '\n');
}

const isString = (v: unknown) => typeof v === 'string';
const isNumber = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
const isStringSet = (v: unknown) => v instanceof Set && [...v].every(isString);

/** Problems with a `session_before_compact` event, as `field: what was found`; empty when it has the shape this extension uses. */
export function compactEventProblems(event: unknown): string[] {
  const e = (event ?? {}) as Record<string, unknown>;
  const p = (e.preparation ?? {}) as Record<string, unknown>;
  const ops = (p.fileOps ?? {}) as Record<string, unknown>;
  const settings = (p.settings ?? {}) as Record<string, unknown>;
  const checks: [string, unknown, (v: unknown) => boolean][] = [
    ['preparation.firstKeptEntryId', p.firstKeptEntryId, isString],
    ['preparation.tokensBefore', p.tokensBefore, isNumber],
    ['preparation.fileOps.read', ops.read, isStringSet],
    ['preparation.fileOps.written', ops.written, isStringSet],
    ['preparation.fileOps.edited', ops.edited, isStringSet],
    ['preparation.settings.keepRecentTokens', settings.keepRecentTokens, isNumber],
    ['branchEntries', e.branchEntries, (v) => Array.isArray(v) && v.every((x) => x && typeof x === 'object' && isString((x as Record<string, unknown>).id))],
    ['customInstructions', e.customInstructions, (v) => v === undefined || isString(v)],
  ];
  return checks.filter(([, v, ok]) => !ok(v)).map(([name, v]) => `${name}: ${JSON.stringify(shapeOf(v, 1))}`);
}
