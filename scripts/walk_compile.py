"""Print the modules one request passes through in ``geoql.compile()``.

    python scripts/walk_compile.py "pubs in Dublin" [--backend cpu]

The request is compiled twice; the second call (model and index loaded) is
traced with ``sys.setprofile`` and shown as a tree of module-to-module calls
(project modules only: ``geoql.*``, and ``overpassql`` as one library). The summary lists
each module once, in the order the request first reaches it, with how often it
was entered from another module; ``--tree`` prints every such entry.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import geoql


def _module_of(code, cache: dict) -> str | None:
    name = cache.get(code.co_filename)
    if name is None and code.co_filename not in cache:
        path = str(Path(code.co_filename).resolve()) if code.co_filename[:1] != "<" else ""
        for mod_name, mod in list(sys.modules.items()):
            file = getattr(mod, "__file__", None)
            if file and path and str(Path(file).resolve()) == path:
                name = mod_name
                break
        if name and not (name.startswith("geoql.") or name.startswith("overpassql")):
            name = None
        elif name and name.startswith("overpassql"):
            name = "overpassql"  # the language core counts as one stage: its inner modules are its own business
        cache[code.co_filename] = name
    return name


def walk(nl: str, backend: str | None) -> tuple[list[tuple[int, str, int]], collections.Counter]:
    geoql.compile(nl, backend=backend)  # warm: load the model and the index
    cache: dict = {}
    stack: list[str | None] = []
    lines: list[list] = []  # [depth, module, calls inside]
    open_lines: list[int] = []
    entries: collections.Counter = collections.Counter()

    def profile(frame, event, arg):
        if event == "call":
            module = _module_of(frame.f_code, cache)
            caller = next((m for m in reversed(stack) if m), None)
            if module and module != caller:
                entries[module] += 1
                lines.append([len(open_lines), module, 0])
                open_lines.append(len(lines) - 1)
            elif module and open_lines:
                lines[open_lines[-1]][2] += 1
            stack.append(module)
        elif event == "return" and stack:
            module = stack.pop()
            caller = next((m for m in reversed(stack) if m), None)
            if module and module != caller and open_lines:
                open_lines.pop()

    sys.setprofile(profile)
    try:
        geoql.compile(nl, backend=backend)
    finally:
        sys.setprofile(None)
    return [tuple(x) for x in lines], entries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("request")
    parser.add_argument("--backend", default=None)
    parser.add_argument("--tree", action="store_true", help="print every module-to-module call, not the summary")
    parser.add_argument("--depth", type=int, default=6, help="with --tree: deepest level shown")
    args = parser.parse_args(argv)
    lines, entries = walk(args.request, args.backend)
    if args.tree:
        for depth, module, calls in lines:
            if depth <= args.depth:
                print(f"{'  ' * depth}{module}  ({calls} calls inside)")
        return 0
    # The summary: each module once, in the order the request first reaches it, under the
    # module that first called it, with how often it was entered from another module.
    first: dict[str, tuple[int, str]] = {}
    parents: list[str] = []
    for depth, module, _ in lines:
        del parents[depth:]
        if module not in first:
            first[module] = (len(first), parents[-1] if parents else "")
        parents.append(module)
    print(f"{'module':<28} {'entered':>7}  first called from")
    for module, (_, caller) in sorted(first.items(), key=lambda kv: kv[1][0]):
        print(f"{module:<28} {entries[module]:>7}  {caller}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
