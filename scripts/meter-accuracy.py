#!/usr/bin/env python3
"""The meter-accuracy table of docs/how-it-works.md, regenerated: `compactd
stats --json` over the shared real transcripts (../shared/transcripts) and
the quality benchmark's licensed Claude Code sessions
(tests/data/quality/transcripts, decompressed to a temporary directory),
printed as the Markdown table the doc holds. Run it after a change to the
counting or the calibration and paste the table into the doc; a test
(tests/it/docs.rs) fails when the doc and this script disagree.

Usage: scripts/meter-accuracy.py [COMPACTD_BIN]
"""

import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "transcripts"
QUALITY = ROOT / "tests" / "data" / "quality" / "transcripts"


def files(scratch: Path):
    pi = SHARED / "pi-session-jsonl"
    yield pi / "large-session.jsonl"
    yield pi / "before-compaction.jsonl"
    yield from sorted((SHARED / "claude-code-jsonl").glob("*/*.jsonl"))
    for packed in sorted(QUALITY.glob("*.jsonl.gz")):
        plain = scratch / packed.name.removesuffix(".gz")
        plain.write_bytes(gzip.decompress(packed.read_bytes()))
        yield plain


def name(path: str) -> str:
    p = Path(path)
    if p.parent.name == "pi-session-jsonl":
        return f"pi `{p.stem}`"
    if p.parent.parent.name == "claude-code-jsonl":
        return "Claude Code `" + p.parent.name.replace("-Users-dain-workspace-", "").lstrip("-") + "`"
    return "Claude Code `" + p.stem.split("-", 2)[-1] + "`"


def after_compactions(accuracy: dict) -> str:
    """The meter at the first reported turn after each compaction the
    transcript recorded, against the provider."""
    each = [signed((c["meter"] - c["provider"]) * 100 / c["provider"]) for c in accuracy["afterCompactions"]]
    return ", ".join(each) or "–"


def pct(x: float) -> str:
    return f"{x:.1f}%"


def signed(x: float) -> str:
    return f"{x:+.1f}%".replace("-", "\u2212")


def main() -> None:
    binary = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("COMPACTD_BIN", str(ROOT / "target/debug/compactd"))
    if not SHARED.is_dir():
        sys.exit(f"meter-accuracy: {SHARED} is missing")
    with tempfile.TemporaryDirectory() as scratch:
        out = subprocess.run(
            [binary, "--no-user-config", "stats", "--json", "--quiet", *map(str, files(Path(scratch)))],
            check=True, capture_output=True, text=True,
        ).stdout
    print("| transcript | turns | meter: mean | meter: max | first turn after a compaction | count alone: mean (bias) | calibrated overhead | count calibrated: mean (bias) | calibrated: max |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in json.loads(out):
        a = row["accuracy"]
        m, e, c = a["meter"], a["estimate"], a["calibrated"]
        cells = [
            f"{name(row['file'])} ({row.get('model') or '?'})",
            str(m["turns"]),
            pct(m["meanAbsPercent"]),
            pct(m["maxAbsPercent"]),
            after_compactions(a),
            f"{pct(e['meanAbsPercent'])} ({signed(e['meanPercent'])})",
            f"{a['overheadTokens']:,} + {a['scale']:.2f} × count",
            f"{pct(c['meanAbsPercent'])} ({signed(c['meanPercent'])})",
            pct(c["maxAbsPercent"]),
        ]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
