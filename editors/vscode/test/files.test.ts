// Protocol tests for files/list, the method Show Tracked Files uses,
// against the real binary.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileItems } from '../src/core/pickers';
import { startServer, type TestServer } from './support/server';

describe('file tracking against the real server', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  test('files/list (Show Tracked Files) lists files the session read', async () => {
    await server.requests.open({ sessionId: 'files' });
    await server.connection.sendNotification('files/didRead', { sessionId: 'files', path: '/work/project/src/lib.rs' });
    const { files, readFiles } = await server.requests.filesList({ sessionId: 'files' });
    const file = files.find((f) => f.path.endsWith('src/lib.rs'));
    assert.ok(file, JSON.stringify(files));
    assert.equal(file.status, 'read');
    assert.ok(readFiles.some((p) => p.endsWith('src/lib.rs')));
    assert.match(fileItems(files)[0].label, /lib\.rs/);
  });
});
