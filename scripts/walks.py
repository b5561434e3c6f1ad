#!/usr/bin/env python3
"""The walks of one `conversation/append` and one `conversation/compact`
(docs/ARCHITECTURE.md, "Two walks"): the source files each passes through
and the lookups of its session by id on the way.

Runs the debug binary under valgrind's callgrind, speaking JSON-RPC on its
stdin: initialize, open a session, a few appends, then for each measured
request the counters are zeroed, the request sent, its answer read and the
counters dumped. A file is walked when a function defined in it ran in
between (background threads, the compaction's task, included); a lookup is
a call to one of `LOOKUPS` (or a `Following` method that reads its map of
followed sessions by id).

    cargo build && scripts/walks.py [target/debug/compactd]

Needs python3 and valgrind (callgrind_control on PATH).
"""

import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Finding the session again by its id: in the open sessions, and in the
# followed ones' mirrors (whether it is followed is a lookup too).
LOOKUPS = {
    "server::sessions::Sessions::get": "Sessions::get",
    "server::sessions::Sessions::get_mut": "Sessions::get_mut",
    "server::sessions::Sessions::find": "Sessions::find",
    "server::sessions::Sessions::find_mut": "Sessions::find_mut",
    "server::sessions::Sessions::get_followed": "Sessions::get_followed",
    "server::sessions::Sessions::get_mut_followed": "Sessions::get_mut_followed",
    "server::sessions::Sessions::find_followed": "Sessions::find_followed",
    "server::sessions::Sessions::find_mut_followed": "Sessions::find_mut_followed",
    "server::sessions::Sessions::compactable": "Sessions::compactable",
    "server::sessions::Sessions::writable": "Sessions::writable",
    "server::sessions::Sessions::with_store": "Sessions::with_store",
    "server::sessions::Sessions::bring_back": "Sessions::bring_back (before routing)",
    "server::following::Following::meter": "Following::meter (mirrors)",
    "server::following::Following::settle": "Following::settle (mirrors)",
    "server::following::Following::ready_to_compact": "Following::ready_to_compact (mirrors)",
    "server::following::Following::recorded_reason": "Following::recorded_reason (mirrors)",
}


class Server:
    def __init__(self, binary, out):
        self.home = tempfile.mkdtemp(prefix="compactd-walks-")
        self.work = os.path.join(self.home, "work")
        os.makedirs(self.work)
        self.edited = os.path.join(self.work, "lexer.rs")
        with open(self.edited, "w") as f:
            f.write("fn lex() {}\n")
        env = dict(os.environ, HOME=self.home, XDG_DATA_HOME=self.home + "/data",
                   XDG_CONFIG_HOME=self.home + "/config")
        self.out = out
        self.proc = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/callgrind.%n", binary],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=open(os.path.join(out, "stderr"), "w"), env=env, cwd=self.work)
        self.buf = b""
        self.next_id = 0

    def send(self, message):
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def read(self):
        while True:
            if b"\r\n\r\n" in self.buf:
                head, rest = self.buf.split(b"\r\n\r\n", 1)
                length = int(re.search(rb"(?i)content-length:\s*(\d+)", head).group(1))
                if len(rest) >= length:
                    self.buf = rest[length:]
                    return json.loads(rest[:length])
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise SystemExit("compactd exited; see " + os.path.join(self.out, "stderr"))
            self.buf += chunk

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            message = self.read()
            if message.get("method") == "window/workDoneProgress/create":
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif message.get("id") == self.next_id and "method" not in message:
                if "error" in message:
                    raise SystemExit(f"{method}: {message['error']}")
                return message["result"]

    def control(self, flag):
        subprocess.run(["callgrind_control", flag, str(self.proc.pid)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def measured(self, method, params):
        """The request between zeroed counters and a dump; the dump's path."""
        time.sleep(1)  # let the answer before settle
        self.control("-z")
        self.request(method, params)
        self.control("-d")
        dumps = sorted((p for p in os.listdir(self.out) if re.fullmatch(r"callgrind\.\d+\.\d+", p)),
                       key=lambda p: int(p.rsplit(".", 1)[1]))
        return os.path.join(self.out, dumps[-1])

    def turn(self, k):
        return [
            {"role": "user", "content": f"task {k}: refactor part {k} of the lexer" + " and more" * 20},
            {"role": "assistant", "content": "", "toolCalls": [{"id": f"c{k}", "name": "edit", "arguments": {
                "path": self.edited, "old_string": "a", "new_string": "b"}}]},
            {"role": "tool", "toolCallId": f"c{k}", "content": "edited" + " ok" * 30},
        ]


def parse(path):
    """Each function that ran: its file; each call: its count."""
    ids = collections.defaultdict(dict)
    functions, calls = {}, collections.Counter()
    file = function = callee = None
    for line in open(path, errors="replace"):
        match = re.match(r"^(fl|fi|fe|fn|cfl|cfi|cfn|calls)=(.*)$", line.rstrip("\n"))
        if not match:
            continue
        key, value = match.groups()
        if key == "calls":
            calls[(function, callee)] += int(value.split()[0])
            continue
        table = "fn" if key in ("fn", "cfn") else "fl"
        named = re.match(r"\((\d+)\)(?: (.*))?$", value)
        if named and named.group(2) is not None:
            ids[table][named.group(1)] = named.group(2)
        name = ids[table][named.group(1)] if named else value
        if key == "fl":
            file = name
        elif key == "fn":
            function = name
            functions[function] = file
        elif key == "cfn":
            callee = name
    return functions, calls


def report(title, path):
    functions, calls = parse(path)
    src = os.path.join(ROOT, "src") + os.sep
    files = sorted({os.path.relpath(f, ROOT) for f in functions.values() if f and f.startswith(src)})
    print(f"## {title}: {len(files)} files")
    print(" ".join(files))
    lookups = []
    for (caller, callee), count in sorted(calls.items(), key=str):
        if not (caller and callee):
            continue
        name = callee.split("compactd::", 1)[-1]
        if name in LOOKUPS and "compactd::server::sessions::Sessions::" not in caller:
            lookups.append(f"{count}× {LOOKUPS[name]} from {caller.split('compactd::', 1)[-1]}")
    print(f"session lookups: {sum(int(l.split('×')[0]) for l in lookups)}")
    for lookup in lookups:
        print("  " + lookup)
    print()


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/debug/compactd")
    out = tempfile.mkdtemp(prefix="compactd-callgrind-")
    server = Server(binary, out)
    server.request("initialize", {
        "processId": None, "capabilities": {}, "rootUri": "file://" + server.work,
        "initializationOptions": {"dataDir": server.home + "/sessions", "fileWatcher": "off",
                                  "keepRecentTokens": 60}})
    server.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    server.request("conversation/open", {"sessionId": "demo", "model": "gpt-4o"})
    for k in range(4):
        server.request("conversation/append", {"sessionId": "demo", "messages": server.turn(k)})
    last = server.turn(9)
    server.request("conversation/append", {"sessionId": "demo", "messages": last[:1]})
    # The walk the code map's "How a message flows" follows: a call that
    # edits a file, and its result.
    report("conversation/append", server.measured(
        "conversation/append", {"sessionId": "demo", "messages": last[1:]}))
    report("conversation/compact", server.measured("conversation/compact", {"sessionId": "demo"}))
    server.request("shutdown", None)
    server.send({"jsonrpc": "2.0", "method": "exit"})
    server.proc.wait()


if __name__ == "__main__":
    main()
