// The status-bar token meter of the active session: a followed agent's with
// its name (`Claude Code 90.4k/200k (45%)`).

import * as vscode from 'vscode';
import { followedTooltip, meterLevel, meterText, meterTooltip, type MeterThresholds } from './core/meter';
import type { SessionState } from './core/sessions';

export function meterThresholds(): MeterThresholds {
  const config = vscode.workspace.getConfiguration('compactd.meter');
  return {
    warningPercent: config.get<number>('warningPercent', 75),
    errorPercent: config.get<number>('errorPercent', 90),
  };
}

export class StatusBarMeter implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('compactd.meter', vscode.StatusBarAlignment.Right, 100);

  constructor() {
    this.item.name = 'compactd token meter';
    this.showIdle();
    this.item.show();
  }

  showIdle(): void {
    this.item.text = '$(fold) compactd';
    this.item.tooltip = 'compactd: no conversation yet. Chat extensions open them through the compactd API.';
    this.item.command = 'compactd.selectSession';
    this.item.backgroundColor = undefined;
  }

  showError(message: string): void {
    this.item.text = '$(error) compactd';
    this.item.tooltip = `compactd is not running: ${message}`;
    this.item.command = 'compactd.showLog';
    this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
  }

  show(session: SessionState | undefined): void {
    if (!session) {
      this.showIdle();
      return;
    }
    const level = meterLevel(session.meter.percent, meterThresholds());
    const { followed, lastCompaction } = session;
    const now = Date.now();
    this.item.text = meterText(session.meter, followed?.agentName);
    this.item.tooltip = new vscode.MarkdownString(
      followed
        ? followedTooltip(session.meter, followed, { lastCompaction, now })
        : meterTooltip(session.sessionId, session.meter, { autoCompact: session.autoCompact, lastCompaction, now }),
    );
    // compactd does not compact an agent's conversation; picking another session is what a click on it is for.
    this.item.command = followed ? 'compactd.followAgentSession' : 'compactd.compact';
    this.item.backgroundColor =
      level === 'normal' ? undefined : new vscode.ThemeColor(level === 'error' ? 'statusBarItem.errorBackground' : 'statusBarItem.warningBackground');
  }

  dispose(): void {
    this.item.dispose();
  }
}
