"""A small Python repository and the scripted model session that works on it.

The session is what a capable model would do for TASK: look around, find
every use of `Store.add_item`, rename it module by module (reading each file
first), run the tests while half done (real failures, real tracebacks), read
a large data file, hit a context overflow, add a `remove` method with its
test, write a new module, update the README and CHANGELOG, and check that
nothing is left. Every tool call runs for real in the repository, so the
tests can check the files afterwards; each model turn carries enough text to
be realistic, and each tool output is as large as the real one.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any, Dict, List

TASK = (
    "Rename `Store.add_item` to `Store.add` everywhere in this repository, add a `Store.remove(sku)` "
    "method with a test, add an `inventory/export.py` module that writes the store as CSV, and record "
    "the changes in README.md and CHANGELOG.md. Never change the data files."
)

#: Modules that call `store.add_item` once each (the store defines it).
CALLERS = [
    "report", "pricing", "importer", "audit", "restock", "labels", "warehouse",
    "returns", "suppliers", "orders", "shipping", "discounts", "forecast", "catalog",
]

#: vLLM's answer when a request does not fit (the deliberate overflow of the script).
VLLM_OVERFLOW = {
    "object": "error",
    "message": "This model's maximum context length is 6000 tokens. However, you requested 6912 tokens "
    "(5888 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.",
    "type": "BadRequestError",
    "param": None,
    "code": 400,
}


def helpers(module: str, count: int = 9) -> str:
    """Realistic filler: small documented helpers, so each module is a few KB like real code."""
    out = []
    for i in range(count):
        out.append(
            textwrap.dedent(
                f'''
                def _{module}_field_{i}(row, default=None):
                    """Return column {i} of a {module} row, stripped, or `default` when it is empty.

                    Rows come from the CSV importer as lists of strings; a missing column is
                    treated like an empty one so old exports (fewer columns) still load.
                    """
                    if len(row) <= {i}:
                        return default
                    value = row[{i}].strip()
                    return value if value else default
                '''
            )
        )
    return "".join(out)


def store_module() -> str:
    return (
        textwrap.dedent(
            '''
            """The inventory store: items by SKU, with quantities and unit prices."""

            from dataclasses import dataclass


            @dataclass
            class Item:
                sku: str
                name: str
                quantity: int = 0
                price_cents: int = 0


            class Store:
                """Items by SKU. Adding an existing SKU adds to its quantity."""

                def __init__(self):
                    self.items = {}

                def add_item(self, item):
                    existing = self.items.get(item.sku)
                    if existing is None:
                        self.items[item.sku] = item
                    else:
                        existing.quantity += item.quantity
                    return self.items[item.sku]

                def get(self, sku):
                    return self.items.get(sku)

                def total_value_cents(self):
                    return sum(i.quantity * i.price_cents for i in self.items.values())

                # -- end of Store --
            '''
        ).lstrip()
        + helpers("store")
    )


def caller_module(name: str, index: int) -> str:
    return (
        textwrap.dedent(
            f'''
            """{name.capitalize()}: loads {name} rows into a store."""

            from inventory.store import Item


            def load_{name}(store, rows):
                """Adds one item per row (sku, name, quantity, price in cents)."""
                loaded = []
                for row in rows:
                    item = Item(row[0], row[1], int(row[2]), int(row[3]) + {index})
                    loaded.append(store.add_item(item))
                return loaded
            '''
        ).lstrip()
        + helpers(name)
    )


def test_module() -> str:
    imports = "\n".join(f"from inventory.{n} import load_{n}" for n in CALLERS)
    cases = "\n".join(
        f"    def test_load_{n}(self):\n"
        f"        store = Store()\n"
        f"        load_{n}(store, [['{n[:3]}-1', '{n} item', '2', '100']])\n"
        f"        self.assertEqual(store.get('{n[:3]}-1').quantity, 2)\n"
        for n in CALLERS
    )
    return (
        "import unittest\n\nfrom inventory.store import Item, Store\n"
        + imports
        + "\n\n\nclass StoreTest(unittest.TestCase):\n"
        + "    def test_add_merges_quantities(self):\n"
        + "        store = Store()\n"
        + "        store.add_item(Item('a-1', 'bolt', 2, 10))\n"
        + "        store.add_item(Item('a-1', 'bolt', 3, 10))\n"
        + "        self.assertEqual(store.get('a-1').quantity, 5)\n\n"
        + cases
        + "\n    # -- more tests --\n\n\nif __name__ == '__main__':\n    unittest.main()\n"
    )


def csv_rows(count: int = 260) -> str:
    lines = ["sku,name,quantity,price_cents,warehouse,supplier,notes"]
    for i in range(count):
        lines.append(
            f"sku-{i:04d},Widget model {i} ({['steel', 'brass', 'nylon'][i % 3]}),{(i * 7) % 50},"
            f"{100 + (i * 37) % 900},{['north', 'south', 'east'][i % 3]},Supplier {i % 11},restocked weekly"
        )
    return "\n".join(lines) + "\n"


def build_repo(root: Path) -> None:
    (root / "inventory").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "data").mkdir()
    (root / "inventory" / "__init__.py").write_text('"""A small inventory package."""\n')
    (root / "inventory" / "store.py").write_text(store_module())
    for index, name in enumerate(CALLERS):
        (root / "inventory" / f"{name}.py").write_text(caller_module(name, index))
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "test_store.py").write_text(test_module())
    (root / "data" / "items.csv").write_text(csv_rows())
    (root / "README.md").write_text(
        "# inventory\n\nA small inventory package: a `Store` of items by SKU and loaders for each kind of row.\n\n"
        "## Usage\n\n```python\nfrom inventory.store import Item, Store\nstore = Store()\nstore.add_item(Item('a-1', 'bolt', 2, 10))\n```\n"
    )
    (root / "CHANGELOG.md").write_text("# Changelog\n\n## Unreleased\n\n- Nothing yet.\n")


# ---------------------------------------------------------------- the script


class Script:
    """Builds the scenario's turns; each tool call gets a unique id and the next turn waits for its result."""

    def __init__(self) -> None:
        self.turns: List[Dict[str, Any]] = []
        self.last_call: str = ""
        self.count = 0

    def say(self, text: str, *calls: Dict[str, Any], error: Dict[str, Any] = None) -> None:
        turn: Dict[str, Any] = {}
        if self.last_call:
            turn["match"] = {"tool_result_for": self.last_call}
        if error is not None:
            turn["error"] = {"status": 400, "body": error}
            self.turns.append(turn)
            # The retry follows compactd's recovery, which may have summarized
            # the result this turn answered: the next turn takes any request.
            self.last_call = ""
            return
        tool_calls = []
        for call in calls:
            self.count += 1
            tool_calls.append({"id": f"call_{self.count:03d}_{call['name']}", **call})
        turn["reply"] = {"text": text, "tool_calls": tool_calls, "usage": "auto"}
        self.turns.append(turn)
        self.last_call = tool_calls[-1]["id"] if tool_calls else ""


def read(path: str) -> Dict[str, Any]:
    return {"name": "read_file", "arguments": {"path": path}}


def edit(path: str, old: str, new: str) -> Dict[str, Any]:
    return {"name": "edit_file", "arguments": {"path": path, "old_text": old, "new_text": new}}


def write(path: str, content: str) -> Dict[str, Any]:
    return {"name": "write_file", "arguments": {"path": path, "content": content}}


def bash(command: str) -> Dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command}}


EXPORT_MODULE = '''"""Writes a store as CSV (sku, name, quantity, price_cents), sorted by SKU."""

import csv
import io


def export_csv(store):
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\\n")
    writer.writerow(["sku", "name", "quantity", "price_cents"])
    for sku in sorted(store.items):
        item = store.items[sku]
        writer.writerow([item.sku, item.name, item.quantity, item.price_cents])
    return out.getvalue()
'''

REMOVE_METHOD = '''def remove(self, sku):
        """Removes the item with this SKU and returns it; a missing SKU raises KeyError."""
        return self.items.pop(sku)

    # -- end of Store --'''

REMOVE_TESTS = '''def test_remove_returns_the_item(self):
        store = Store()
        store.add(Item('r-1', 'nut', 4, 5))
        self.assertEqual(store.remove('r-1').quantity, 4)
        self.assertIsNone(store.get('r-1'))
        with self.assertRaises(KeyError):
            store.remove('r-1')

    def test_export_csv(self):
        from inventory.export import export_csv
        store = Store()
        store.add(Item('b-2', 'washer', 1, 3))
        store.add(Item('a-1', 'bolt', 2, 10))
        self.assertEqual(export_csv(store).splitlines()[1:], ['a-1,bolt,2,10', 'b-2,washer,1,3'])

    # -- more tests --'''


def scenario() -> Dict[str, Any]:
    """The scripted session (see the module docstring), as a scripted_model.py scenario."""
    s = Script()
    s.say("I'll start by looking at the layout of the repository.", bash("ls -R"))
    s.say("Let me read the README to see how the store is meant to be used.", read("README.md"))
    s.say("Now every use of add_item, so I know which files the rename touches.", bash("grep -rn add_item --include=*.py . | sort"))
    s.say("The method is defined in inventory/store.py; reading it first.", read("inventory/store.py"))
    s.say("Renaming the definition.", edit("inventory/store.py", "def add_item(self, item):", "def add(self, item):"))
    for i, name in enumerate(CALLERS):
        s.say(f"Next caller: inventory/{name}.py. Reading it before I change it.", read(f"inventory/{name}.py"))
        s.say(
            f"In {name}.py the call is inside load_{name}; switching it to the new name.",
            edit(f"inventory/{name}.py", "loaded.append(store.add_item(item))", "loaded.append(store.add(item))"),
        )
        if i in (3, 9):
            s.say("Half the callers are done; running the tests to see where we stand.", bash("python3 -m unittest discover -s tests -v 2>&1"))
    s.say("The tests still call add_item once; reading the test file.", read("tests/test_store.py"))
    s.say(
        "Updating both calls in the test to the new name.",
        edit(
            "tests/test_store.py",
            "store.add_item(Item('a-1', 'bolt', 2, 10))\n        store.add_item(Item('a-1', 'bolt', 3, 10))",
            "store.add(Item('a-1', 'bolt', 2, 10))\n        store.add(Item('a-1', 'bolt', 3, 10))",
        ),
    )
    s.say("Running the whole suite again.", bash("python3 -m unittest discover -s tests -v 2>&1"))
    s.say("Before writing the exporter I want to see the columns of the real data.", read("data/items.csv"))
    s.say("", error=VLLM_OVERFLOW)
    s.say(
        "The data has sku, name, quantity, price_cents and some extra columns; the exporter will write the first four.",
        write("inventory/export.py", EXPORT_MODULE),
    )
    s.say("Now the remove method, right after the other Store methods.", edit("inventory/store.py", "# -- end of Store --", REMOVE_METHOD))
    s.say("Tests for remove and for the exporter.", edit("tests/test_store.py", "# -- more tests --", REMOVE_TESTS))
    s.say("Running the suite with the new tests.", bash("python3 -m unittest discover -s tests -v 2>&1"))
    s.say(
        "Updating the README example to the new name.",
        edit("README.md", "store.add_item(Item('a-1', 'bolt', 2, 10))", "store.add(Item('a-1', 'bolt', 2, 10))\nstore.remove('a-1')"),
    )
    s.say(
        "And the changelog.",
        edit(
            "CHANGELOG.md",
            "- Nothing yet.",
            "- `Store.add_item` is now `Store.add`.\n- New `Store.remove(sku)`.\n- New `inventory/export.py`: `export_csv(store)`.",
        ),
    )
    s.say("Last check: nothing may still use the old name.", bash("grep -rn add_item . || echo 'no add_item left'"))
    s.say("Done. Store.add_item is now Store.add in every module and test, Store.remove(sku) exists with a test, inventory/export.py writes CSV, and README.md and CHANGELOG.md describe the changes. All tests pass.")
    return {
        "description": "A long coding session on a small Python repository (examples/agent/tests/repo_session.py).",
        "context_window": 6000,
        "turns": s.turns,
        "fallback": {"text": "(no scripted turn left)"},
    }


#: Every file the session modifies or creates.
MODIFIED_FILES = sorted(
    ["inventory/store.py", "tests/test_store.py", "inventory/export.py", "README.md", "CHANGELOG.md"]
    + [f"inventory/{name}.py" for name in CALLERS]
)


def write_scenario(path: Path) -> Path:
    path.write_text(json.dumps(scenario(), indent=1))
    return path
