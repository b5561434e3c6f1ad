// Uses compactd the way a chat extension would: through the API that
// compactd's activate() returns.
const vscode = require('vscode');
const { conversation } = require('./conversation');

function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand('compactdE2e.appendConversation', async () => {
      const compactd = await vscode.extensions.getExtension('compactd.compactd').activate();
      const { sessionId } = await compactd.openSession({
        sessionId: 'e2e-demo',
        model: 'gpt-4o',
        systemPrompt: 'You are a coding agent.',
      });
      const { ids, meter } = await compactd.append(sessionId, conversation(8));
      vscode.window.showInformationMessage(`compactd E2E: appended ${ids.length} messages to ${sessionId} (${meter.contextTokens} tokens)`);
    }),
    vscode.commands.registerCommand('compactdE2e.closeConversation', async () => {
      const compactd = await vscode.extensions.getExtension('compactd.compactd').activate();
      const first = await compactd.closeSession('e2e-demo');
      const again = await compactd.closeSession('e2e-demo');
      vscode.window.showInformationMessage(`compactd E2E: closed e2e-demo: ${first.closed}, then ${again.closed}`);
    }),
  );
}

module.exports = { activate };
