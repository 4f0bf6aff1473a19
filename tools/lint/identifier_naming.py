#!/usr/bin/env python3
"""Runs clang-tidy's readability-identifier-naming over every product, test and tool TU.

The naming rule itself lives in the repository's .clang-tidy (Google naming; docs/design.md,
"One naming convention"). This script is ctest lint.identifier_naming.{tzrun,worker}
(tests/lint/CMakeLists.txt), one entry per side of the tree:

  tools/lint/identifier_naming.py --build build [--clang-tidy PATH] [-j N] [--timing]
                                 [[--invert] FILE_REGEX]

Every translation unit of build/compile_commands.json that lies in the source tree (src/, tests/,
tools/) is checked with only readability-identifier-naming and --warnings-as-errors=*, N at a
time. Diagnostics are de-duplicated (a header is seen by many TUs) and printed file:line sorted.
Paths under --exclude (default: none) are not checked.

Exit status: 0 clean; 1 naming violations, or clang-tidy failed on a TU; 77 clang-tidy not found
(ctest reports Skipped) unless TZRUN_REQUIRE_CLANG_TIDY=1 is set (the ci test preset), then 1.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

SKIP = 77
CHECK = "readability-identifier-naming"
DEFAULT_EXCLUDES = ()
DIAG = re.compile(r"^(?P<path>/[^:]+):(?P<line>\d+):(?P<col>\d+): (?:warning|error): "
                  r"(?P<msg>.*) \[(?P<check>[\w.,-]+)\]$")


def find_clang_tidy(given):
    for name in ([given] if given else []) + ["clang-tidy-14", "clang-tidy"]:
        if name and name != "TZRUN_CLANG_TIDY-NOTFOUND":
            path = shutil.which(name)
            if path:
                return path
    return None


def translation_units(build, root, excludes, pattern, invert):
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        entries = json.load(f)
    files = set()
    for entry in entries:
        path = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
        rel = os.path.relpath(path, root)
        if rel.startswith("..") or not rel.startswith(("src/", "tests/", "tools/")):
            continue
        if rel.startswith(excludes) or (pattern and bool(re.search(pattern, rel)) == invert):
            continue
        files.add(path)
    return sorted(files)


_running = set()  # clang-tidy processes in flight, ended when ctest's timeout signals us
_lock = threading.Lock()


def run_one(clang_tidy, build, path):
    # Only the naming check: compiler warnings are the build's job (-Werror there). clang 23 warns
    # about libstdc++ 12's own C++20-deprecated get_temporary_buffer inside std::stable_sort.
    cmd = [clang_tidy, "-p", build, "--quiet", f"--checks=-*,{CHECK}", "--warnings-as-errors=*",
           "--extra-arg=-Wno-deprecated-declarations", path]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with _lock:
        _running.add(proc)
    began = time.monotonic()
    out, _ = proc.communicate()
    with _lock:
        _running.discard(proc)
    return path, proc.returncode, out, time.monotonic() - began


def _stop(signum, _frame):
    with _lock:
        for proc in _running:
            proc.kill()
    os._exit(128 + signum)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="build folder with compile_commands.json")
    ap.add_argument("--clang-tidy", default=None, help="clang-tidy binary (default: PATH)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--exclude", action="append", default=None,
                    help="source-relative path prefix not to check (repeatable)")
    ap.add_argument("--timing", action="store_true", help="print each TU's clang-tidy seconds")
    ap.add_argument("--invert", action="store_true", help="only TUs whose path does not match")
    ap.add_argument("pattern", nargs="?", default=None,
                    help="only TUs whose source-relative path matches (re.search)")
    args = ap.parse_args()

    root = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
    build = os.path.realpath(args.build)
    clang_tidy = find_clang_tidy(args.clang_tidy)
    if clang_tidy is None:
        print("identifier_naming: clang-tidy not found (install clang-tidy; scripts/setup.sh does)")
        return 1 if os.environ.get("TZRUN_REQUIRE_CLANG_TIDY") == "1" else SKIP

    excludes = tuple(args.exclude) if args.exclude else DEFAULT_EXCLUDES
    tus = translation_units(build, root, excludes, args.pattern, args.invert)
    if not tus:
        print(f"identifier_naming: no translation units in {build}/compile_commands.json")
        return 1
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    start = time.monotonic()
    findings, failures = set(), []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for path, rc, out, seconds in pool.map(lambda p: run_one(clang_tidy, build, p), tus):
            if args.timing:
                print(f"identifier_naming: {seconds:6.1f} s {os.path.relpath(path, root)}", flush=True)
            naming_lines = 0
            for line in out.splitlines():
                naming_lines += f"[{CHECK}" in line
                m = DIAG.match(line)
                if not m:
                    continue
                rel = os.path.relpath(os.path.realpath(m["path"]), root)
                if m["check"].startswith("clang-diagnostic"):
                    failures.append(f"{rel}:{m['line']}: {m['msg']}")
                if CHECK not in m["check"] or rel.startswith(("..", "build/") + excludes):
                    continue
                findings.add((rel, int(m["line"]), int(m["col"]), m["msg"]))
            if rc != 0 and naming_lines == 0:
                failures.append(f"{os.path.relpath(path, root)}: clang-tidy exit {rc}\n{out[-2000:]}")
    for rel, line, col, msg in sorted(findings):
        print(f"{rel}:{line}:{col}: {msg}")
    for failure in failures:
        print(f"identifier_naming: {failure}")
    print(f"identifier_naming: {len(tus)} translation units, {len(findings)} naming violations, "
          f"{time.monotonic() - start:.0f} s with -j{args.jobs}")
    return 1 if findings or failures else 0


if __name__ == "__main__":
    sys.exit(main())
