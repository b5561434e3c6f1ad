// compactd-client: spawn compactd (or attach to a shared one) and call every method of its protocol, typed from schemas/.

export { contentText } from './content';
export { CompactdClient, ServerExited, type ConnectOptions, type InitializeResult, type ServerExit, type SpawnOptions } from './client';
export { connectWebSocket, discoveryPath, liveDiscovery, readDiscovery, type Discovery, type WebSocketTransport } from './shared';
export { CompactdMethods, SERVER_NOTIFICATIONS, type ServerNotifications } from './generated/api';
export * as methods from './generated/methods';
export * from './generated/types';
export { checkServerVersion, findServer, ServerNotFound, type LocateOptions, type ServerCandidate, type ServerSource } from './locate';
export {
  errorCode,
  isCancelled,
  RequestAborted,
  ResponseError,
  RpcBase,
  WORK_DONE_PROGRESS,
  type ProgressToken,
  type RequestOptions,
  type RpcConnection,
  type RpcSource,
  type WorkDoneProgressBegin,
  type WorkDoneProgressEnd,
  type WorkDoneProgressReport,
  type WorkDoneProgressValue,
} from './rpc';
export type { Disposable } from 'vscode-jsonrpc';
