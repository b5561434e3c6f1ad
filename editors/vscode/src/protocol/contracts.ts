// Results of methods that another issue is adding to the server right now
// (issue 5: files/list), written from the agreed contract because their
// schemas are not in schemas/ yet. Each moves to types.generated.ts, and out
// of this file, when its schema is committed.

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
