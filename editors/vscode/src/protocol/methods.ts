// Method and notification names of the compactd protocol (docs/protocol.md).

export const OPEN = 'conversation/open';
export const APPEND = 'conversation/append';
export const HISTORY = 'conversation/history';
export const COMPACT = 'conversation/compact';
export const CHECK = 'conversation/check';
export const PREVIEW = 'conversation/preview';
export const SET_AUTO_COMPACT = 'conversation/setAutoCompact';
export const COMPACTIONS = 'conversation/compactions';
export const BRANCH = 'conversation/branch';
export const FILES_LIST = 'files/list';

/** Server → client: a session's meter changed. */
export const TOKENS = 'conversation/tokens';
/** Server → client: a compaction was applied. */
export const DID_COMPACT = 'conversation/didCompact';

/** Server → client: the circuit breaker stopped auto-compaction of a session. */
export const AUTO_COMPACT_STOPPED = 'conversation/autoCompactStopped';

/** JSON-RPC error codes the extension reacts to. */
export const METHOD_NOT_FOUND = -32601;
export const REQUEST_CANCELLED = -32800;
