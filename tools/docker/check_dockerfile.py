#!/usr/bin/env python3
"""check_dockerfile.py — checks docker/Dockerfile without a Docker engine (ctest docker.dockerfile).

What it does, in order (each check prints "ok" or "FAIL: ..."; exit 1 when any check fails):
  1. Parses the Dockerfile the way docker does (line continuations, comment lines removed,
     stages, ARG/ENV scoping) and checks: stages "build" and "runtime" (runtime last), a bash
     SHELL in each stage, every ARG a stage's RUN/USER/LABEL uses is declared in that stage,
     `bash -n` on every RUN, EXPOSE 22, ENTRYPOINT in exec form naming the COPYed entrypoint.
  2. Runs the DEVICE `case` RUN with bash for cpu, cu126, cu129, cu130 and compares TORCH_INDEX,
     CUDA_PKG, CUDA_COMPAT_PKG, CUDA_VERSION, CUDA_HOME with the expected values; unknown DEVICEs
     must fail with a message naming the valid ones; a TORCH_INDEX_BASE mirror is honoured.
  3. Runs the other package/venv/user RUNs with every external command replaced by a stub that
     only records its arguments (PATH holds nothing else, so nothing is installed or deleted),
     per DEVICE, and checks what they would install: the CUDA toolkit / cuda-compat, the RDMA
     libraries and OpenSSH, torch from TORCH_INDEX, the optional non-root user.
  4. Checks every COPY source exists in the build context (and is not excluded by
     docker/Dockerfile.dockerignore), every script a RUN calls is COPYed first and passes
     `bash -n`, COPY --from=build sources are what the build stage produces, and the version
     pins match scripts/setup.sh and CMakeLists.txt.
  5. Runs docker/entrypoint.sh: the platform preparation script (sourced, exports carried into the
     command, failure stops it, absent is silent), the cuda-compat LD_LIBRARY_PATH decision; and
     tools/docker/{build,promote}.sh without docker (exit 2 with a message).
  6. Scratch build: copies the files the build stage COPYs (git-tracked or untracked-not-ignored
     files only, i.e. what a clean checkout holds) into a scratch folder and runs the build
     stage's `cmake --preset` RUN there with the existing venv in place of the image's (pip is
     not run). The `cmake --build` (tzrun + tzrec_train, several minutes of libtorch compiles)
     and `cmake --install` RUNs run too only with TZRUN_DOCKER_SCRATCH_BUILD=1, to keep CI short.
     Without a venv holding torch the scratch step is skipped with a notice.
  7. tools/docker/check_build_path.py: TORCH_INDEX, the pip_cert secret, docker/Dockerfile.smoke and
     the build scripts' option checks (the podman / no-registry build path of docs/deploy.md).

Usage: check_dockerfile.py [--dockerfile docker/Dockerfile] [--work-dir DIR] [--repo ROOT]
Env:   TZRUN_DOCKER_SCRATCH_BUILD=1   also build and install in the scratch copy
       TZRUN_DOCKER_SCRATCH_JOBS=N    `nproc` seen by the scratch build (default: real nproc)
       TZRUN_VENV                     venv for the scratch steps (default <repo>/.venv)
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_build_path  # noqa: E402 (tools/docker/check_build_path.py)

DEVICES = {
    "cpu": dict(CUDA_VERSION="", CUDA_HOME="", CUDA_PKG="", CUDA_COMPAT_PKG=""),
    "cu126": dict(CUDA_VERSION="12.6", CUDA_HOME="/usr/local/cuda-12.6",
                  CUDA_PKG="cuda-toolkit-12-6", CUDA_COMPAT_PKG="cuda-compat-12-6"),
    "cu129": dict(CUDA_VERSION="12.9", CUDA_HOME="/usr/local/cuda-12.9",
                  CUDA_PKG="cuda-toolkit-12-9", CUDA_COMPAT_PKG="cuda-compat-12-9"),
    "cu130": dict(CUDA_VERSION="13.0", CUDA_HOME="/usr/local/cuda-13.0",
                  CUDA_PKG="cuda-toolkit-13-0", CUDA_COMPAT_PKG="cuda-compat-13-0"),
}
TORCH_INDEX_BASE = "https://download.pytorch.org/whl"
RDMA_PKGS = ["rdma-core", "libibverbs1", "ibverbs-providers"]
# Commands the stubbed RUNs may call; anything else is "command not found" (PATH = stubs only).
STUBS = ["apt-get", "bash", "ln", "rm", "mkdir", "python3", "useradd", "chown", "dpkg-query",
         "curl", "dpkg", "cat", "dirname"]


@dataclass
class Instr:
    line: int
    keyword: str
    args: str
    flags: list[str] = field(default_factory=list)


@dataclass
class Stage:
    name: str
    base: str
    line: int
    instrs: list[Instr] = field(default_factory=list)

    def args(self) -> dict[str, str]:
        """ARG defaults of this stage, in order (ARG without default -> "")."""
        out: dict[str, str] = {}
        for i in self.instrs:
            if i.keyword == "ARG":
                name, _, default = i.args.partition("=")
                out[name.strip()] = default.strip()
        return out

    def envs(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for i in self.instrs:
            if i.keyword == "ENV":
                for tok in shlex.split(i.args):
                    k, _, v = tok.partition("=")
                    out[k] = v
        return out

    def shell(self) -> list[str]:
        shells = [i for i in self.instrs if i.keyword == "SHELL"]
        return json.loads(shells[-1].args) if shells else ["/bin/sh", "-c"]

    def runs(self) -> list[Instr]:
        return [i for i in self.instrs if i.keyword == "RUN"]


class Checker:
    def __init__(self, dockerfile: Path, repo: Path, work: Path):
        self.dockerfile = dockerfile
        self.repo = repo
        self.work = work
        self.failures: list[str] = []
        self.global_args: dict[str, str] = {}
        self.stages: list[Stage] = []

    # --- reporting ---------------------------------------------------------------------------
    def ok(self, what: str) -> None:
        print(f"ok: {what}")

    def fail(self, what: str) -> None:
        print(f"FAIL: {what}")
        self.failures.append(what)

    def expect(self, cond: bool, what: str, why: str = "") -> bool:
        if cond:
            self.ok(what)
        else:
            self.fail(f"{what}{': ' + why if why else ''}")
        return cond

    # --- parsing -----------------------------------------------------------------------------
    def parse(self) -> None:
        lines = self.dockerfile.read_text().splitlines()
        instrs: list[Instr] = []
        buf, start = "", 0
        for n, raw in enumerate(lines, 1):
            stripped = raw.strip()
            if stripped.startswith("#") or (not stripped and not buf):
                continue  # docker drops comment lines, also inside a continued instruction
            if not buf:
                start = n
            if raw.rstrip().endswith("\\"):
                buf += raw.rstrip()[:-1]
                continue
            buf += raw
            instrs.append(self._instr(start, buf))
            buf = ""
        if buf:
            instrs.append(self._instr(start, buf))
        for i in instrs:
            if i.keyword == "FROM":
                m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?\s*$", i.args, re.I)
                if not m:
                    self.fail(f"line {i.line}: cannot parse FROM {i.args!r}")
                    continue
                self.stages.append(Stage(m.group(2) or str(len(self.stages)), m.group(1), i.line))
            elif not self.stages:
                if i.keyword == "ARG":
                    k, _, v = i.args.partition("=")
                    self.global_args[k.strip()] = v.strip()
            else:
                self.stages[-1].instrs.append(i)

    @staticmethod
    def _instr(line: int, text: str) -> Instr:
        keyword, _, rest = text.strip().partition(" ")
        rest = rest.strip()
        flags = []
        while rest.startswith("--"):
            flag, _, rest = rest.partition(" ")
            flags.append(flag)
            rest = rest.strip()
        return Instr(line, keyword.upper(), rest, flags)

    def stage(self, name: str) -> Stage | None:
        return next((s for s in self.stages if s.name == name), None)

    @staticmethod
    def expand(text: str, env: dict[str, str]) -> str:
        """Docker's variable substitution for non-RUN instructions ($X, ${X}, ${X:-w}, ${X:+w})."""
        def sub(m: re.Match) -> str:
            name = m.group(1) or m.group(4)
            op, word = m.group(2), m.group(3)
            val = env.get(name, "")
            if op == ":-":
                return val if val else word
            if op == ":+":
                return word if val else ""
            return val
        return re.sub(r"\$\{(\w+)(?:(:[-+])([^}]*))?\}|\$(\w+)", sub, text)

    def find_run(self, stage: Stage, needle: str) -> Instr | None:
        hits = [r for r in stage.runs() if needle in r.args]
        if len(hits) != 1:
            self.fail(f"stage {stage.name}: expected one RUN containing {needle!r}, found {len(hits)}")
            return None
        return hits[0]

    # --- running RUN bodies ------------------------------------------------------------------
    def run_body(self, stage: Stage, body: str, env: dict[str, str], cwd: Path,
                 timeout: int = 120) -> subprocess.CompletedProcess:
        return subprocess.run(stage.shell() + [body], env=env, cwd=cwd, text=True,
                              capture_output=True, timeout=timeout)

    def stage_env(self, stage: Stage, **over: str) -> dict[str, str]:
        env = {"HOME": str(self.work / "home"), "LANG": "C.UTF-8"}
        env.update(stage.args())
        env.update(stage.envs())
        env.update(over)
        return env

    def make_stubs(self, where: Path) -> Path:
        stubs = where / "stubs"
        stubs.mkdir(parents=True, exist_ok=True)
        log = where / "calls.log"
        for name in STUBS:
            p = stubs / name
            p.write_text('#!/bin/bash\nprintf "%s" "${0##*/}" >> "$STUB_LOG"\n'
                         'for a in "$@"; do printf " %s" "$a" >> "$STUB_LOG"; done\n'
                         'echo >> "$STUB_LOG"\nexit 0\n')
            p.chmod(0o755)
        log.write_text("")
        return stubs

    def stubbed(self, stage: Stage, run: Instr, tag: str, device_env: Path | None = None,
                **over: str) -> tuple[int, list[list[str]], str]:
        """Runs `run` with stub commands only. Returns (rc, calls as argv lists, stderr)."""
        where = self.work / "stubbed" / tag
        shutil.rmtree(where, ignore_errors=True)
        stubs = self.make_stubs(where)
        body = run.args
        if device_env is not None:
            body = body.replace("/etc/tzrun/device.env", str(device_env))
        venv = where / "venv"
        (venv / "bin").mkdir(parents=True)
        shutil.copy(stubs / "python3", venv / "bin" / "python")
        env = self.stage_env(stage, PATH=str(stubs), STUB_LOG=str(where / "calls.log"),
                             TZRUN_VENV=str(venv), **over)
        if device_env is not None and "DEVICE_ENV" in env:
            env["DEVICE_ENV"] = str(device_env)
        # The SHELL itself is the real /bin/bash; only commands looked up on PATH are stubs.
        proc = self.run_body(stage, body, env, where)
        calls = [ln.split(" ") for ln in (where / "calls.log").read_text().splitlines()]
        return proc.returncode, calls, proc.stderr

    def device_env_file(self, device: str, **over: str) -> tuple[subprocess.CompletedProcess, Path]:
        build = self.stage("build")
        run = self.find_run(build, 'case "${DEVICE}"')
        out = self.work / "device" / (device or "EMPTY") / "device.env"
        shutil.rmtree(out.parent, ignore_errors=True)
        out.parent.mkdir(parents=True)
        env = self.stage_env(build, PATH=os.environ.get("PATH", "/usr/bin:/bin"),
                             DEVICE=device, DEVICE_ENV=str(out), **over)
        proc = self.run_body(build, run.args, env, out.parent)
        return proc, out

    @staticmethod
    def read_env(path: Path) -> dict[str, str]:
        out = {}
        for ln in path.read_text().splitlines():
            k, _, v = ln.partition("=")
            out[k] = v
        return out

    # --- checks ------------------------------------------------------------------------------
    def check_structure(self) -> None:
        names = [s.name for s in self.stages]
        self.expect("build" in names and "runtime" in names, "stages build and runtime exist",
                    f"stages are {names}")
        self.expect(bool(names) and names[-1] == "runtime", "the final stage is runtime",
                    f"last stage is {names[-1] if names else None}")
        declared_anywhere = set(self.global_args)
        for s in self.stages:
            declared_anywhere |= set(s.args())
        for s in self.stages:
            sh = s.shell()
            self.expect(sh[0].endswith("bash") and sh[-1] == "-c", f"stage {s.name}: SHELL is bash",
                        f"SHELL is {sh}; the RUNs use bash syntax")
            local = set(s.args()) | set(s.envs())
            for i in s.instrs:
                if i.keyword not in ("RUN", "USER", "LABEL", "ENV", "COPY", "WORKDIR"):
                    continue
                used = set(re.findall(r"\$\{(\w+)", i.args)) | set(re.findall(r"\$(\w+)", i.args))
                missing = sorted((used & declared_anywhere) - local)
                if missing:
                    self.fail(f"stage {s.name} line {i.line}: {i.keyword} uses {missing} but the "
                              f"stage does not declare them (ARG is per stage in docker)")
            for r in s.runs():
                proc = subprocess.run(["bash", "-n", "-c", r.args], capture_output=True, text=True)
                if proc.returncode != 0:
                    self.fail(f"stage {s.name} line {r.line}: RUN does not parse: {proc.stderr.strip()}")
        self.ok("every stage declares the ARGs it uses; every RUN parses (bash -n)")

        rt = self.stage("runtime")
        if rt is None:
            return
        exposes = " ".join(i.args for i in rt.instrs if i.keyword == "EXPOSE").split()
        self.expect("22" in exposes, "runtime EXPOSEs 22 (sshd)", f"EXPOSE {exposes}")
        eps = [i for i in rt.instrs if i.keyword == "ENTRYPOINT"]
        if self.expect(len(eps) == 1, "runtime has one ENTRYPOINT"):
            try:
                ep = json.loads(eps[0].args)
            except json.JSONDecodeError:
                ep = None
            if self.expect(isinstance(ep, list), "ENTRYPOINT is in exec form (signals reach tzrun)",
                           eps[0].args):
                dests = {self.expand(c.args.split()[-1], {}) for c in rt.instrs
                         if c.keyword == "COPY" and "docker/entrypoint.sh" in c.args.split()[:-1]}
                self.expect(ep[0] in dests, "ENTRYPOINT runs the COPYed docker/entrypoint.sh",
                            f"ENTRYPOINT {ep[0]}, entrypoint.sh copied to {sorted(dests)}")
        users = [i for i in rt.instrs if i.keyword == "USER"]
        args = rt.args()
        if self.expect(len(users) == 1 and "USER_NAME" in args and "USER_UID" in args,
                       "runtime has ARG USER_NAME, ARG USER_UID and one USER"):
            as_root = self.expand(users[0].args, dict(args, USER_NAME=""))
            as_user = self.expand(users[0].args, dict(args, USER_NAME="tzuser"))
            self.expect(as_root == "root" and as_user == "tzuser",
                        "USER is root when USER_NAME is empty, USER_NAME otherwise",
                        f"got {as_root!r} / {as_user!r}")
            useradd_line = next((r.line for r in rt.runs() if "useradd" in r.args), 10**9)
            self.expect(useradd_line < users[0].line, "the user is created before USER")

    def check_devices(self) -> None:
        for device, want in DEVICES.items():
            proc, out = self.device_env_file(device)
            if proc.returncode != 0 or not out.exists():
                self.fail(f"DEVICE={device}: the case RUN failed (rc {proc.returncode}): {proc.stderr.strip()}")
                continue
            got = self.read_env(out)
            want = dict(want, DEVICE=device, TORCH_INDEX=f"{TORCH_INDEX_BASE}/{device}",
                        TORCH_VERSION=self.stage("build").args().get("TORCH_VERSION", "?"))
            diff = {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}
            self.expect(not diff, f"DEVICE={device}: " + ", ".join(
                f"{k}={v or '(empty)'}" for k, v in want.items() if k in ("TORCH_INDEX", "CUDA_PKG", "CUDA_COMPAT_PKG")),
                f"(got, want) {diff}")
        for bad in ["cu118", "", "CPU", "cuda"]:
            proc, out = self.device_env_file(bad)
            self.expect(proc.returncode != 0 and f"DEVICE='{bad}'" in proc.stderr
                        and "cpu cu126 cu129 cu130" in proc.stderr and not out.exists(),
                        f"DEVICE={bad!r} is refused with a message naming the valid DEVICEs",
                        f"rc {proc.returncode}, stderr {proc.stderr.strip()!r}, env file written: {out.exists()}")
        proc, out = self.device_env_file("cu129", TORCH_INDEX_BASE="https://mirror.example/pytorch-wheels/")
        got = self.read_env(out) if out.exists() else {}
        self.expect(got.get("TORCH_INDEX") == "https://mirror.example/pytorch-wheels/cu129",
                    "TORCH_INDEX_BASE mirror (trailing slash) -> <mirror>/cu129", f"got {got.get('TORCH_INDEX')}")

    def check_stubbed_runs(self) -> None:
        build, rt = self.stage("build"), self.stage("runtime")
        apt_run = self.find_run(build, "docker/install_cuda.sh")
        venv_run = self.find_run(build, "python3 -m venv")
        rt_run = self.find_run(rt, "openssh-server")
        user_run = self.find_run(rt, "useradd")
        if not all([apt_run, venv_run, rt_run, user_run]):
            return
        for device, want in DEVICES.items():
            _, denv = self.device_env_file(device)
            # build stage: packages
            rc, calls, err = self.stubbed(build, apt_run, f"build-apt-{device}", denv)
            cuda_calls = [c for c in calls if c[0] == "bash" and "docker/install_cuda.sh" in c]
            setup_calls = [c for c in calls if c[0] == "bash" and "scripts/setup.sh" in c]
            links = [c for c in calls if c[0] == "ln"]
            expected_cuda = [want["CUDA_PKG"]] if want["CUDA_PKG"] else []
            self.expect(rc == 0 and setup_calls == [["bash", "scripts/setup.sh", "--no-torch"]]
                        and len(cuda_calls) == 1 and cuda_calls[0][2:] == expected_cuda
                        and (links == ([["ln", "-sfn", want["CUDA_HOME"], "/usr/local/cuda"]]
                                       if want["CUDA_HOME"] else [])),
                        f"DEVICE={device}: build stage installs setup.sh's packages and CUDA "
                        f"{expected_cuda or 'nothing'}", f"rc {rc} {err.strip()} calls {calls}")
            # build stage: venv
            rc, calls, err = self.stubbed(build, venv_run, f"build-venv-{device}", denv)
            pip = [c for c in calls if c[0] == "python3" or c[0] == "python"]
            torch_calls = [c for c in pip if any(a.startswith("torch==") for a in c)]
            torch_ok = (len(torch_calls) == 1 and "--index-url" in torch_calls[0] and
                        torch_calls[0][torch_calls[0].index("--index-url") + 1] == f"{TORCH_INDEX_BASE}/{device}")
            arrow_ok = any(f"pyarrow=={build.args().get('PYARROW_VERSION')}" in c for c in pip)
            self.expect(rc == 0 and torch_ok and arrow_ok,
                        f"DEVICE={device}: the venv gets torch from {TORCH_INDEX_BASE}/{device} and pyarrow",
                        f"rc {rc} {err.strip()} calls {calls}")
            # runtime stage: packages
            rc, calls, err = self.stubbed(rt, rt_run, f"runtime-apt-{device}", denv)
            installed = {a for c in calls if c[:2] == ["apt-get", "install"] for a in c[2:]
                         if not a.startswith("-")}
            compat = [c for c in calls if c[0] == "bash" and any("install_cuda.sh" in a for a in c)]
            is_cuda = bool(want["CUDA_PKG"])
            ok = (rc == 0 and {"openssh-server", "openssh-client", "python3"} <= installed
                  and (set(RDMA_PKGS) <= installed) == is_cuda
                  and [c[2:] for c in compat] == ([[want["CUDA_COMPAT_PKG"]]] if is_cuda else [])
                  and any(c[0] == "rm" and any(a.startswith("/etc/ssh/ssh_host_") for a in c)
                          for c in calls))
            self.expect(ok, f"DEVICE={device}: runtime installs OpenSSH"
                        + (f", {', '.join(RDMA_PKGS)} and {want['CUDA_COMPAT_PKG']}" if is_cuda
                           else ", no RDMA/CUDA packages"),
                        f"rc {rc} {err.strip()} calls {calls}")
        # pip mirror
        _, denv = self.device_env_file("cpu")
        rc, calls, _ = self.stubbed(build, venv_run, "build-venv-mirror", denv,
                                    PIP_MIRROR="https://pypi.mirror.example/simple")
        arrow = [c for c in calls if any(a.startswith("pyarrow==") for a in c)]
        self.expect(bool(arrow) and "https://pypi.mirror.example/simple" in arrow[0],
                    "PIP_MIRROR is used for pyarrow", f"calls {calls}")
        # optional user
        for name, uid, want in [("", "", None),
                                ("tzuser", "", ["useradd", "--create-home", "--shell", "/bin/bash", "tzuser"]),
                                ("tzuser", "1234", ["useradd", "--create-home", "--shell", "/bin/bash",
                                                    "--uid", "1234", "tzuser"])]:
            rc, calls, err = self.stubbed(rt, user_run, f"user-{name or 'root'}-{uid}",
                                          USER_NAME=name, USER_UID=uid)
            adds = [c for c in calls if c[0] == "useradd"]
            self.expect(rc == 0 and adds == ([want] if want else []),
                        f"USER_NAME={name!r} USER_UID={uid!r}: " + (" ".join(want) if want else "no useradd"),
                        f"rc {rc} {err.strip()} calls {calls}")

    def context_files(self) -> set[str]:
        out = subprocess.run(["git", "-C", str(self.repo), "ls-files", "-co", "--exclude-standard", "-z"],
                             capture_output=True, text=True, check=True).stdout
        return {p for p in out.split("\0") if p and (self.repo / p).exists()}

    def dockerignore(self) -> list[str]:
        p = self.dockerfile.with_name(self.dockerfile.name + ".dockerignore")
        if not p.exists():
            return []
        return [ln.strip() for ln in p.read_text().splitlines() if ln.strip() and not ln.startswith("#")]

    def ignored(self, path: str, patterns: list[str]) -> bool:
        hit = False
        for pat in patterns:
            neg = pat.startswith("!")
            pat = pat[1:] if neg else pat
            pat = pat.strip("/")
            if fnmatch.fnmatch(path, pat) or fnmatch.fnmatch(path, pat + "/*") or \
                    fnmatch.fnmatch(path.split("/")[0], pat):
                hit = not neg
        return hit

    def copies(self, stage: Stage) -> list[tuple[Instr, list[str], str]]:
        out = []
        for i in stage.instrs:
            if i.keyword == "COPY" and not any(f.startswith("--from") for f in i.flags):
                parts = i.args.split()
                out.append((i, parts[:-1], parts[-1]))
        return out

    def check_context(self) -> None:
        files = self.context_files()
        patterns = self.dockerignore()
        for s in self.stages:
            for i, srcs, _ in self.copies(s):
                for src in srcs:
                    present = src in files or any(f.startswith(src.rstrip("/") + "/") for f in files)
                    self.expect(present and not self.ignored(src, patterns),
                                f"stage {s.name} line {i.line}: COPY {src} exists in the context",
                                "missing from the git tree" if not present else "excluded by the .dockerignore")
        # scripts called from RUNs: COPYed before, executable, bash -n
        for s in self.stages:
            copied: set[str] = set()
            for i in s.instrs:
                if i.keyword == "COPY" and not any(f.startswith("--from") for f in i.flags):
                    copied |= set(i.args.split()[:-1])
                if i.keyword != "RUN":
                    continue
                for script in re.findall(r"bash\s+((?:scripts|docker|tools)/[\w./-]+\.sh)", i.args):
                    path = self.repo / script
                    good = (script in copied or any(script.startswith(c.rstrip("/") + "/") for c in copied)) \
                        and path.exists() and os.access(path, os.X_OK) and \
                        subprocess.run(["bash", "-n", str(path)]).returncode == 0
                    self.expect(good, f"stage {s.name} line {i.line}: {script} is COPYed first, "
                                "executable and parses")
        ep = self.repo / "docker/entrypoint.sh"
        self.expect(ep.exists() and os.access(ep, os.X_OK) and
                    subprocess.run(["bash", "-n", str(ep)]).returncode == 0,
                    "docker/entrypoint.sh is executable and parses")
        # COPY --from=build sources
        build, rt = self.stage("build"), self.stage("runtime")
        produced = {build.args().get("DEVICE_ENV", "?"), build.envs().get("TZRUN_PREFIX", "?")}
        for i in rt.instrs:
            if i.keyword == "COPY" and "--from=build" in i.flags:
                src = i.args.split()[0]
                self.expect(src in produced, f"runtime line {i.line}: COPY --from=build {src} is produced "
                            "by the build stage", f"build produces {sorted(produced)}")
        self.expect(build.envs().get("TZRUN_VENV", "").startswith(build.envs().get("TZRUN_PREFIX", "?") + "/"),
                    "the venv lives under the installed prefix (copied with it, same path at run time)")
        # pins
        setup = (self.repo / "scripts/setup.sh").read_text()
        m_t = re.search(r'TORCH_VERSION="\$\{TZRUN_TORCH_VERSION:-([^}]+)\}"', setup)
        m_a = re.search(r'PYARROW_VERSION="([^"]+)"', setup)
        self.expect(bool(m_t) and build.args().get("TORCH_VERSION") == m_t.group(1),
                    "ARG TORCH_VERSION matches scripts/setup.sh",
                    f"{build.args().get('TORCH_VERSION')} vs {m_t and m_t.group(1)}")
        self.expect(bool(m_a) and build.args().get("PYARROW_VERSION") == m_a.group(1),
                    "ARG PYARROW_VERSION matches scripts/setup.sh",
                    f"{build.args().get('PYARROW_VERSION')} vs {m_a and m_a.group(1)}")
        m_v = re.search(r"project\(tzrun\s+VERSION\s+([\d.]+)", (self.repo / "CMakeLists.txt").read_text())
        self.expect(bool(m_v) and rt.args().get("TZRUN_VERSION") == m_v.group(1),
                    "ARG TZRUN_VERSION matches project(VERSION)",
                    f"{rt.args().get('TZRUN_VERSION')} vs {m_v and m_v.group(1)}")

    def check_entrypoint(self) -> None:
        ep = str(self.repo / "docker/entrypoint.sh")
        d = self.work / "entrypoint"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(d)}

        def run(args, **env):
            e = dict(base)
            e.update(env)
            return subprocess.run(["bash", ep] + args, env=e, capture_output=True, text=True, timeout=60)

        prep = d / "prepare.sh"
        prep.write_text("export TZRUN_TEST_PREPARED=yes\nexport PATH=/opt/test/bin:$PATH\necho preparing\nexit 0\n")
        p = run(["bash", "-c", 'echo "prepared=$TZRUN_TEST_PREPARED path=$PATH args=$#"', "x", "a b"],
                TZRUN_PREPARE_SCRIPT=str(prep))
        self.expect(p.returncode == 0 and "prepared=yes path=/opt/test/bin:" in p.stdout
                    and "args=1" in p.stdout and "preparing" not in p.stdout,
                    "entrypoint sources the prepare script (even one ending in exit 0) and keeps its exports",
                    f"rc {p.returncode} out {p.stdout!r} err {p.stderr!r}")
        p = run(["echo", "ran"], TZRUN_PREPARE_SCRIPT=str(d / "absent.sh"))
        self.expect(p.returncode == 0 and p.stdout == "ran\n" and p.stderr == "",
                    "entrypoint skips an absent prepare script silently", f"{p}")
        p = run(["echo", "ran"], TZRUN_PREPARE_SCRIPT=str(d / "absent.sh"), TZRUN_PREPARE_SCRIPT_REQUIRED="1")
        self.expect(p.returncode == 1 and "absent.sh" in p.stderr and "ran" not in p.stdout,
                    "TZRUN_PREPARE_SCRIPT_REQUIRED=1 makes an absent script an error", f"{p}")
        bad = d / "bad.sh"
        bad.write_text("echo broken >&2\nexit 3\n")
        p = run(["echo", "ran"], TZRUN_PREPARE_SCRIPT=str(bad))
        self.expect(p.returncode == 3 and "bad.sh exited with status 3" in p.stderr and "ran" not in p.stdout,
                    "a failing prepare script stops the container with its status", f"{p}")
        # cuda-compat decision
        cuda = d / "cuda-12.6"
        (cuda / "compat").mkdir(parents=True)
        (cuda / "compat/libcuda.so.560.35.03").write_text("")
        denv = d / "device.env"
        denv.write_text(f"DEVICE=cu126\nCUDA_HOME={cuda}\n")
        drv = d / "nvidia-version"
        cases = [("535.104.05", "auto", True), ("570.86.15", "auto", False), ("535.104.05", "0", False),
                 ("570.86.15", "1", True)]
        for version, mode, want in cases:
            drv.write_text(f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {version}  Release Build\n")
            p = run(["bash", "-c", 'echo "LD=$LD_LIBRARY_PATH"'], TZRUN_PREPARE_SCRIPT="",
                    TZRUN_DEVICE_ENV_FILE=str(denv), TZRUN_NVIDIA_VERSION_FILE=str(drv),
                    TZRUN_CUDA_COMPAT=mode, LD_LIBRARY_PATH="/x")
            got = p.stdout.strip() == f"LD={cuda}/compat:/x"
            self.expect(p.returncode == 0 and got == want and (want or p.stdout.strip() == "LD=/x"),
                        f"driver {version}, compat 560, TZRUN_CUDA_COMPAT={mode}: compat "
                        + ("used" if want else "not used"), f"{p}")

    def check_tool_scripts(self) -> None:
        for script in ["build.sh", "promote.sh"]:
            path = self.repo / "tools/docker" / script
            env = dict(os.environ, DOCKER=str(self.work / "no-such-docker"))
            p = subprocess.run(["bash", str(path), "cpu"], env=env, capture_output=True, text=True, timeout=60)
            self.expect(p.returncode == 2 and "no-such-docker" in p.stderr,
                        f"tools/docker/{script} exits 2 with a message when docker is missing",
                        f"rc {p.returncode} err {p.stderr!r}")
            p = subprocess.run(["bash", str(path), "cu118"], env=env, capture_output=True, text=True, timeout=60)
            self.expect(p.returncode == 2 and "cu118" in p.stderr,
                        f"tools/docker/{script} refuses an unknown DEVICE", f"rc {p.returncode} err {p.stderr!r}")

    def check_scratch(self) -> None:
        build = self.stage("build")
        venv = Path(os.environ.get("TZRUN_VENV", self.repo / ".venv"))
        if subprocess.run([str(venv / "bin/python"), "-c", "import torch, pyarrow"],
                          capture_output=True).returncode != 0:
            print(f"SKIP: scratch build: {venv} has no torch/pyarrow (run scripts/setup.sh)")
            return
        scratch = self.work / "scratch"
        shutil.rmtree(scratch, ignore_errors=True)
        src = scratch / "src"
        files = self.context_files()
        workdir = "/"
        for i in build.instrs:
            if i.keyword == "WORKDIR":
                workdir = i.args
            if i.keyword != "COPY" or any(f.startswith("--from") for f in i.flags):
                continue
            parts = i.args.split()
            for s in parts[:-1]:
                for f in sorted(x for x in files if x == s or x.startswith(s.rstrip("/") + "/")):
                    dst = src / f
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(self.repo / f, dst)
        self.expect(workdir == "/src/tzrun", "the build stage works in /src/tzrun", workdir)
        stubs = scratch / "bin"
        stubs.mkdir(parents=True)
        jobs = os.environ.get("TZRUN_DOCKER_SCRATCH_JOBS", str(os.cpu_count() or 2))
        (stubs / "nproc").write_text(f"#!/bin/sh\necho {int(jobs)}\n")
        (stubs / "nproc").chmod(0o755)
        env = self.stage_env(build, PATH=f"{stubs}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                             TZRUN_VENV=str(venv), TZRUN_PREFIX=str(scratch / "prefix"),
                             CCACHE_BASEDIR=str(src), CCACHE_NOHASHDIR="1")
        steps = [("configure", "cmake --preset")]
        if os.environ.get("TZRUN_DOCKER_SCRATCH_BUILD") == "1":
            steps += [("build", "cmake --build"), ("install", "cmake --install")]
        else:
            print("note: scratch build/install skipped (set TZRUN_DOCKER_SCRATCH_BUILD=1 to run them)")
        for name, needle in steps:
            run = self.find_run(build, needle)
            if run is None:
                return
            proc = self.run_body(build, run.args, env, src, timeout=3600)
            (scratch / f"{name}.log").write_text(proc.stdout + proc.stderr)
            if not self.expect(proc.returncode == 0, f"scratch {name}: RUN at line {run.line} succeeds",
                               f"rc {proc.returncode}, log {scratch / (name + '.log')}:\n"
                               + (proc.stdout + proc.stderr)[-3000:]):
                return
        self.expect((src / "build/build.ninja").exists(), "scratch configure wrote build/build.ninja")
        if len(steps) == 3:
            for b in ["tzrun", "tzrec_train"]:
                self.expect(os.access(scratch / "prefix/bin" / b, os.X_OK), f"scratch install has bin/{b}")

    def main(self) -> int:
        self.work.mkdir(parents=True, exist_ok=True)
        self.parse()
        if self.stage("build") is None or self.stage("runtime") is None:
            self.check_structure()
            return 1
        self.check_structure()
        self.check_devices()
        self.check_stubbed_runs()
        self.check_context()
        self.check_entrypoint()
        self.check_tool_scripts()
        check_build_path.run(self)  # the podman / no-registry path: TORCH_INDEX, pip_cert, Dockerfile.smoke
        self.check_scratch()
        if self.failures:
            print(f"\ncheck_dockerfile: {len(self.failures)} check(s) failed:")
            for f in self.failures:
                print(f"  - {f.splitlines()[0]}")
            return 1
        print("\ncheck_dockerfile: all checks passed")
        return 0


def main() -> int:
    here = Path(__file__).resolve()
    repo_default = here.parents[2]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dockerfile", type=Path, default=repo_default / "docker/Dockerfile")
    ap.add_argument("--repo", type=Path, default=repo_default, help="build context (repository root)")
    ap.add_argument("--work-dir", type=Path, default=None, help="scratch folder (default: a temp dir)")
    a = ap.parse_args()
    work = a.work_dir or Path(tempfile.mkdtemp(prefix="check_dockerfile."))
    if not a.dockerfile.exists():
        print(f"check_dockerfile: {a.dockerfile} does not exist; pass --dockerfile", file=sys.stderr)
        return 2
    return Checker(a.dockerfile.resolve(), a.repo.resolve(), work.resolve()).main()


if __name__ == "__main__":
    sys.exit(main())
