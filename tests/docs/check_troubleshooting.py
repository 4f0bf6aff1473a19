#!/usr/bin/env python3
"""Checks that docs/troubleshooting.md covers the error messages tzrun and tzrec_train can print.

Scans the C++ sources for the construction sites of the main error families (``throw
ConfigError(...)``, ``CommError(``, ``WorkerSetupError(``, ``CheckpointError(``, the rendezvous and
platform errors, the command line's ``fail(``/``bad(`` ...), takes the message's first string
literal (adjacent literals joined, C escapes decoded) and requires its first 25 characters to
appear in docs/troubleshooting.md. Literals shorter than 12 characters (": expected ", "' in ")
identify nothing and are skipped. Whitespace is collapsed on both sides and a markdown table's
escaped pipe (``\\|``) counts as ``|``.

Usage: check_troubleshooting.py [--root REPO] [--doc PATH] [--list]
Exit status: 0 when every fragment is found, 1 otherwise (the missing ones are listed with their
source location), 2 when the scan itself looks broken (too few sites found).
"""
from __future__ import annotations

import argparse
import pathlib
import re
import sys

FRAGMENT_CHARS = 25
MIN_LITERAL_CHARS = 12
# A scan that finds fewer sites than this has been broken by a refactoring (renamed families,
# moved folders): fail loudly instead of passing vacuously.
MIN_SITES = 150

TZRUN_DIRS = ["src/cli", "src/agent", "src/rendezvous", "src/store", "src/app", "src/platform"]
WORKER_DIRS = ["src/worker"]

# (call name, folders, index of the literal that carries the message)
FAMILIES: list[tuple[str, list[str], int]] = [
    # tzrec_train
    ("ConfigError", TZRUN_DIRS + WORKER_DIRS, 0),  # tzrec::ConfigError and rendezvous::ConfigError
    ("CommError", WORKER_DIRS, 0),
    ("CheckpointError", WORKER_DIRS, 0),
    ("InputError", WORKER_DIRS, 0),
    ("PlannerError", WORKER_DIRS, 3),  # PlannerError(kind, table, missing, message)
    # tzrun
    ("WorkerSetupError", TZRUN_DIRS, 0),
    ("AgentError", TZRUN_DIRS, 0),
    ("LogDirError", TZRUN_DIRS, 0),
    ("SpawnError", TZRUN_DIRS, 0),
    ("ReportError", TZRUN_DIRS, 0),
    ("PlatformError", TZRUN_DIRS, 0),
    ("BindError", TZRUN_DIRS, 0),
    ("RendezvousConnectionError", TZRUN_DIRS, 0),
    ("RendezvousTimeoutError", TZRUN_DIRS, 0),
    ("RendezvousStateError", TZRUN_DIRS, 0),
    ("RendezvousClosedError", TZRUN_DIRS, 0),
    ("RendezvousGracefulExit", TZRUN_DIRS, 0),
    # the command line parser: fail(message) and bad(dest, message, fix)
    ("fail", ["src/cli"], 0),
    ("bad", ["src/cli"], 1),
]

_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "0": "\0", "r": "\r"}


def strip_comments(text: str) -> str:
    """Removes // and /* */ comments, keeping string and character literals (and line count)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i)
            end = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
        else:
            out.append(c)
            i += 1
    return "".join(out)


def code_chars(text: str, start: int):
    """(index, char) of text[start:] outside string and char literals (escapes honoured)."""
    i, n = start, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        yield i, c
        i += 1


def call_arguments(text: str, open_paren: int) -> str:
    """The text between the parenthesis at open_paren and its match (literals skipped over)."""
    depth = 0
    for i, c in code_chars(text, open_paren):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return text[open_paren + 1 : i]
    return text[open_paren + 1 :]


def decode(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


def top_level_literals(args: str) -> list[str]:
    """The argument list's string literals, adjacent ones joined ("a" "b" -> "ab"), per argument
    position order; only literals outside nested calls are kept apart from their own argument."""
    literals: list[str] = []
    pieces = re.finditer(r'"((?:[^"\\\n]|\\.)*)"|(\S)', args)
    previous_was_literal = False
    for m in pieces:
        if m.group(1) is not None:
            if previous_was_literal:
                literals[-1] += decode(m.group(1))
            else:
                literals.append(decode(m.group(1)))
            previous_was_literal = True
        else:
            previous_was_literal = False
    return literals


def split_arguments(args: str) -> list[str]:
    """Splits a call's argument text at top-level commas."""
    parts: list[str] = []
    depth, start = 0, 0
    for i, c in code_chars(args, 0):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(args[start:i])
            start = i + 1
    parts.append(args[start:])
    return parts


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\\|", "|"))


def collect(root: pathlib.Path) -> list[tuple[str, int, str, str]]:
    """(file, line, family, fragment) for every checked site."""
    sites: list[tuple[str, int, str, str]] = []
    seen: set[tuple[str, int, str]] = set()
    for family, dirs, literal_index in FAMILIES:
        call = re.compile(r"(?<![\w.:>])" + re.escape(family) + r"\s*\(")
        for d in dirs:
            for path in sorted((root / d).rglob("*")):
                if path.suffix not in (".cpp", ".hpp", ".h", ".cc"):
                    continue
                text = strip_comments(path.read_text(encoding="utf-8"))
                for m in call.finditer(text):
                    args = call_arguments(text, m.end() - 1)
                    parts = split_arguments(args)
                    if literal_index >= len(parts):
                        continue
                    literals = top_level_literals(parts[literal_index])
                    if not literals:
                        continue
                    literal = literals[0]
                    if len(literal.strip()) < MIN_LITERAL_CHARS:
                        continue
                    fragment = normalise(literal[:FRAGMENT_CHARS]).strip()
                    line = text.count("\n", 0, m.start()) + 1
                    rel = str(path.relative_to(root))
                    key = (rel, line, fragment)
                    if key in seen:
                        continue
                    seen.add(key)
                    sites.append((rel, line, family, fragment))
    return sites


def main() -> int:
    here = pathlib.Path(__file__).resolve()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, default=here.parents[2])
    parser.add_argument("--doc", type=pathlib.Path, default=None)
    parser.add_argument("--list", action="store_true", help="print every checked fragment")
    args = parser.parse_args()
    root = args.root.resolve()
    doc_path = args.doc or root / "docs" / "troubleshooting.md"
    doc = normalise(doc_path.read_text(encoding="utf-8"))
    sites = collect(root)
    if len(sites) < MIN_SITES:
        print(f"check_troubleshooting: only {len(sites)} message sites found under {root}/src "
              f"(expected >= {MIN_SITES}); the scan is broken, update FAMILIES", file=sys.stderr)
        return 2
    missing = [s for s in sites if s[3] not in doc]
    if args.list:
        for rel, line, family, fragment in sites:
            print(f"{rel}:{line}: {family}: {fragment!r}")
    for rel, line, family, fragment in missing:
        print(f"{rel}:{line}: {family}(\"{fragment}...\") is not in {doc_path.name}",
              file=sys.stderr)
    distinct = len({s[3] for s in sites})
    if missing:
        print(f"check_troubleshooting: {len(missing)} of {len(sites)} messages are missing from "
              f"{doc_path}: add each (as a pattern with placeholders) with its cause and fix",
              file=sys.stderr)
        return 1
    print(f"check_troubleshooting: all {len(sites)} message sites ({distinct} distinct fragments) "
          f"are documented in {doc_path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
