// Results of methods that other issues are adding to the server right now
// (issue 3: preview, setAutoCompact, check, compactions, branch; issue 5:
// files/list), written from their agreed contracts because their schemas are
// not in schemas/ yet. Each moves to types.generated.ts, and out of this file,
// when its schema is committed.

import type { MeterInfo } from './types.generated';

export type CompactionStrategy = 'checkpoint' | 'incremental' | 'prune' | 'handoff';

export interface CheckResult {
  shouldCompact: boolean;
  triggers: string[];
  meter: MeterInfo;
  autoCompact: boolean;
  compacting: boolean;
}

export interface SetAutoCompactResult {
  sessionId: string;
  enabled: boolean;
}

export interface PreviewResult {
  strategy: string;
  compacted: false;
  firstKeptMessageId: string | null;
  summarizeMessageIds: string[];
  keepMessageIds: string[];
  pruneMessageIds: string[];
  tokensBefore: number;
  estimatedTokensAfter: number;
  reason?: string | null;
}

export interface CompactionRecord {
  id: string;
  trigger: string;
  strategy: string;
  summarizer: string;
  summary: string;
  tokensBefore: number;
  tokensAfter: number;
  durationMs: number;
  recall: number;
  createdAt: string | number;
  messagesSummarized: number;
  chunks: number;
  degraded: boolean;
}

export interface CompactionsResult {
  compactions: CompactionRecord[];
}

export interface BranchResult {
  sessionId: string;
  messageCount: number;
  meter: MeterInfo;
}

export type FileStatus = 'read' | 'modified' | 'created' | 'deleted';

export interface TrackedFile {
  path: string;
  displayPath: string;
  status: FileStatus;
  firstOp: unknown;
  lastOp: unknown;
  reads: number;
  modifications: number;
  origins: string[];
  lastMessageId?: string | null;
  contentHash?: string | null;
  generation: number;
}

export interface FilesListResult {
  files: TrackedFile[];
  readFiles: string[];
  modifiedFiles: string[];
}
