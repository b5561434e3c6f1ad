#!/usr/bin/env python3
"""The meter-accuracy table of docs/how-it-works.md, regenerated: `compactd
stats --json` over the shared real transcripts (../shared/transcripts),
printed as the Markdown table the doc holds. Run it after a change to the
counting or the calibration and paste the table into the doc; a test
(tests/it/docs.rs) fails when the doc and this script disagree.

Usage: scripts/meter-accuracy.py [COMPACTD_BIN]
"""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "transcripts"


def files():
    pi = SHARED / "pi-session-jsonl"
    yield pi / "large-session.jsonl"
    yield pi / "before-compaction.jsonl"
    yield from sorted((SHARED / "claude-code-jsonl").glob("*/*.jsonl"))


def name(path: str) -> str:
    p = Path(path)
    if p.parent.name == "pi-session-jsonl":
        return f"pi `{p.stem}`"
    return "Claude Code `" + p.parent.name.replace("-Users-dain-workspace-", "").lstrip("-") + "`"


def pct(x: float) -> str:
    return f"{x:.1f}%"


def signed(x: float) -> str:
    return f"{x:+.1f}%".replace("-", "\u2212")


def main() -> None:
    binary = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("COMPACTD_BIN", str(ROOT / "target/debug/compactd"))
    if not SHARED.is_dir():
        sys.exit(f"meter-accuracy: {SHARED} is missing")
    out = subprocess.run(
        [binary, "--no-user-config", "stats", "--json", "--quiet", *map(str, files())],
        check=True, capture_output=True, text=True,
    ).stdout
    print("| transcript | turns | meter: mean | meter: max | count alone: mean (bias) | calibrated overhead | count calibrated: mean (bias) | calibrated: max |")
    print("|---|---|---|---|---|---|---|---|")
    for row in json.loads(out):
        a = row["accuracy"]
        m, e, c = a["meter"], a["estimate"], a["calibrated"]
        cells = [
            f"{name(row['file'])} ({row.get('model') or '?'})",
            str(m["turns"]),
            pct(m["meanAbsPercent"]),
            pct(m["maxAbsPercent"]),
            f"{pct(e['meanAbsPercent'])} ({signed(e['meanPercent'])})",
            f"{a['overheadTokens']:,} + {a['scale']:.2f} × count",
            f"{pct(c['meanAbsPercent'])} ({signed(c['meanPercent'])})",
            pct(c["maxAbsPercent"]),
        ]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
