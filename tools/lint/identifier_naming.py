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

Clean results are remembered in tools/lint/identifier_naming.clean (committed): one line per TU
that passed, "<source path> <key>", the key a SHA-256 of everything the naming check of that TU
depends on: the clang-tidy version, .clang-tidy, the TU's compile command (the source root
replaced by a placeholder, so any clone matches) and the content of every file it includes from
the source tree or the build tree (ninja's depfile record, `ninja -t deps`); files under .venv
stand for the pinned torch/pyarrow and count by torch's version. A TU whose key is in the file
is not checked again; any change to it or to a header it includes makes a new key. --no-cache
checks every TU. The file is rewritten after each run with the keys of the TUs that are clean
now (commit it, so a fresh clone's CI re-checks only what changed).

Exit status: 0 clean; 1 naming violations, or clang-tidy failed on a TU; 77 clang-tidy not found
(ctest reports Skipped) unless TZRUN_REQUIRE_CLANG_TIDY=1 is set (the ci test preset), then 1.
"""
import argparse
import concurrent.futures
import fcntl
import hashlib
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


CACHE_NAME = "tools/lint/identifier_naming.clean"
CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "identifier_naming.clean")


def _file_digest(path, memo):
    if path not in memo:
        try:
            with open(path, "rb") as f:
                memo[path] = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            memo[path] = "missing"
    return memo[path]


def ninja_deps(build):
    """{object path (absolute): [dependency paths (absolute)]} from ninja's deps log."""
    try:
        out = subprocess.run(["ninja", "-C", build, "-t", "deps"], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    deps, current = {}, None
    for line in out.splitlines():
        if line and not line[0].isspace():
            current = os.path.normpath(os.path.join(build, line.split(":", 1)[0]))
            deps[current] = []
        elif line.strip() and current is not None:
            deps[current].append(os.path.normpath(os.path.join(build, line.strip())))
    return deps


def cache_keys(build, root, clang_tidy, tus):
    """{TU path: key} for the TUs whose dependencies ninja recorded (see the module doc)."""
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        entries = json.load(f)
    deps, memo = ninja_deps(build), {}
    venv = os.path.join(root, ".venv") + os.sep
    base = [subprocess.run([clang_tidy, "--version"], capture_output=True, text=True).stdout,
            _file_digest(os.path.join(root, ".clang-tidy"), memo),
            _file_digest(os.path.join(root, ".venv/lib/python3.11/site-packages/torch/version.py"),
                         memo)]
    keys, wanted = {}, set(tus)
    for entry in entries:
        path = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
        cmd = entry.get("command") or " ".join(entry.get("arguments", []))
        out = re.search(r"\s-o\s+(\S+)", cmd)
        if path not in wanted or out is None:
            continue
        obj = os.path.normpath(os.path.join(entry["directory"], out.group(1)))
        if obj not in deps:
            continue  # not built yet: no record of its includes
        h = hashlib.sha256("\0".join(base + [cmd.replace(root, "<root>")]).encode())
        for dep in sorted(set(deps[obj])):
            if dep.startswith(venv) or not dep.startswith(root + os.sep):
                continue  # pinned packages and the system: covered by the versions above
            h.update(f"\0{os.path.relpath(dep, root)}={_file_digest(dep, memo)}".encode())
        keys[path] = h.hexdigest()
    return keys


def read_cache():
    try:
        with open(CACHE, encoding="utf-8") as f:
            return dict(line.split() for line in f if line.strip() and not line.startswith("#"))
    except OSError:
        return {}


def update_cache(root, checked, clean):
    """Records the keys of this run's clean TUs and drops the rest of `checked`; both ctest entries
    run at once, so the file is merged under an exclusive lock."""
    fd = os.open(CACHE, os.O_RDWR | os.O_CREAT, 0o644)
    with os.fdopen(fd, "r+", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        cache = dict(line.split() for line in f if line.strip() and not line.startswith("#"))
        for path in checked:
            cache.pop(os.path.relpath(path, root), None)
        cache.update({os.path.relpath(path, root): key for path, key in clean.items()})
        text = "# tools/lint/identifier_naming.py: TUs found clean and the key each was checked " \
               "under\n" + "".join(f"{rel} {key}\n" for rel, key in sorted(cache.items()))
        f.seek(0)
        if f.read() != text:
            f.seek(0)
            f.truncate()
            f.write(text)


_running = set()  # clang-tidy processes in flight, ended when ctest's timeout signals us
_lock = threading.Lock()


def run_one(clang_tidy, build, path):
    # Only the naming check: compiler warnings are the build's job (-Werror there). clang 23 warns
    # about libstdc++ 12's own C++20-deprecated get_temporary_buffer inside std::stable_sort.
    # -fno-openmp: the units built with GCC's -fopenmp (FindTzrunTorch.cmake) would make clang look
    # for its own omp.h, which a clang without libomp lacks; names do not depend on OpenMP.
    cmd = [clang_tidy, "-p", build, "--quiet", f"--checks=-*,{CHECK}", "--warnings-as-errors=*",
           "--extra-arg=-Wno-deprecated-declarations", "--extra-arg=-fno-openmp", path]
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
    ap.add_argument("--no-cache", action="store_true",
                    help=f"check every TU, ignoring and leaving {CACHE_NAME} as it is")
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
    keys = {} if args.no_cache else cache_keys(build, root, clang_tidy, tus)
    known = read_cache()
    todo = [p for p in tus if p not in keys or known.get(os.path.relpath(p, root)) != keys[p]]
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    start = time.monotonic()
    findings, failures, clean = check(clang_tidy, build, root, excludes, todo, args)
    for rel, line, col, msg in sorted(findings):
        print(f"{rel}:{line}:{col}: {msg}")
    for failure in failures:
        print(f"identifier_naming: {failure}")
    if not args.no_cache:
        update_cache(root, todo, {p: keys[p] for p in clean if p in keys})
    print(f"identifier_naming: {len(tus)} translation units ({len(tus) - len(todo)} unchanged since "
          f"found clean, {CACHE_NAME}), {len(findings)} naming violations, "
          f"{time.monotonic() - start:.0f} s with -j{args.jobs}")
    return 1 if findings or failures else 0


def check(clang_tidy, build, root, excludes, tus, args):
    """Runs the check over `tus`: (findings, failures, the TUs with neither)."""
    findings, failures, clean = set(), [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for path, rc, out, seconds in pool.map(lambda p: run_one(clang_tidy, build, p), tus):
            if args.timing:
                print(f"identifier_naming: {seconds:6.1f} s {os.path.relpath(path, root)}", flush=True)
            naming_lines, failed, kept = 0, len(failures), 0
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
                kept += 1
            if rc != 0 and naming_lines == 0:
                failures.append(f"{os.path.relpath(path, root)}: clang-tidy exit {rc}\n{out[-2000:]}")
            # Clean: no finding in our sources (generated protobuf headers under build/ are not
            # ours) and no failure; clang-tidy's exit is non-zero whenever it saw any naming line.
            if kept == 0 and len(failures) == failed and (rc == 0 or naming_lines > 0):
                clean.append(path)
    return findings, failures, clean

if __name__ == "__main__":
    sys.exit(main())
