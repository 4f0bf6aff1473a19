"""check_build_path.py — the checks of tools/docker/check_dockerfile.py for the podman/no-registry
build path (issue 18), kept apart so check_dockerfile.py stays small. run(checker) adds:

  * TORCH_INDEX (a whole index URL, e.g. PyPI) replaces <TORCH_INDEX_BASE>/<DEVICE>;
  * the venv RUN mounts the optional pip_cert secret and a pip cache, and uses the secret only
    when it is there (nothing of it lands in a layer);
  * docker/Dockerfile.smoke: FROM ${IMAGE}, every COPY source exists in the context (and is not
    excluded by its .dockerignore), the smoke scripts parse, and its RUN goes through the entrypoint
    with the stub preparation script;
  * tools/docker/{build,make_base,check_image}.sh parse and are executable; build.sh refuses an
    unknown --engine and an unreadable --pip-cert (or a folder) with exit 2 and a message naming
    the value (build.sh and promote.sh); each script's --help prints its usage and nothing else.
"""
from __future__ import annotations

import os
import subprocess


def check_torch_index(c) -> None:
    proc, out = c.device_env_file("cpu", TORCH_INDEX="https://pypi.org/simple")
    got = c.read_env(out) if out.exists() else {}
    c.expect(proc.returncode == 0 and got.get("TORCH_INDEX") == "https://pypi.org/simple",
             "TORCH_INDEX=https://pypi.org/simple replaces <TORCH_INDEX_BASE>/<DEVICE>",
             f"rc {proc.returncode}, got {got.get('TORCH_INDEX')}")
    run = c.find_run(c.stage("build"), "python3 -m venv")
    if run is None:
        return
    c.expect("--mount=type=secret,id=pip_cert" in run.flags and
             "--mount=type=cache,target=/root/.cache/pip" in run.flags,
             "the venv RUN mounts the pip_cert secret and a pip cache", f"flags {run.flags}")
    c.expect("[[ -s /run/secrets/pip_cert ]]" in run.args and "PIP_CERT=/run/secrets/pip_cert" in run.args
             and "--no-cache-dir" not in run.args,
             "pip trusts the pip_cert secret only when it is given; downloads go to the cache mount")


def check_smoke(c) -> None:
    from check_dockerfile import Checker  # the same parser as docker/Dockerfile's

    path = c.repo / "docker/Dockerfile.smoke"
    if not c.expect(path.exists(), "docker/Dockerfile.smoke exists"):
        return
    smoke = Checker(path, c.repo, c.work / "smoke")
    smoke.parse()
    if not c.expect(len(smoke.stages) == 1 and smoke.stages[0].base == "${IMAGE}"
                    and "IMAGE" in smoke.global_args, "Dockerfile.smoke builds FROM ${IMAGE} (a built image)",
                    f"stages {[(s.name, s.base) for s in smoke.stages]}"):
        return
    files, patterns = c.context_files(), smoke.dockerignore()
    stage = smoke.stages[0]
    for i, srcs, _ in smoke.copies(stage):
        for src in srcs:
            present = src in files or any(f.startswith(src.rstrip("/") + "/") for f in files)
            c.expect(present and not smoke.ignored(src, patterns),
                     f"Dockerfile.smoke line {i.line}: COPY {src} exists in the context")
    runs = stage.runs()
    c.expect(len(runs) == 1 and "/usr/local/bin/tzrun-entrypoint.sh bash /opt/tzrun-smoke/smoke.sh" in runs[0].args
             and "TZRUN_PREPARE_SCRIPT=/opt/tzrun-smoke/prepare_env.sh" in runs[0].args,
             "the smoke RUN goes through the entrypoint with the stub preparation script")
    for script in ["docker/smoke/smoke.sh", "docker/smoke/prepare_env.sh", "docker/smoke/prepare_fail.sh"]:
        c.expect(subprocess.run(["bash", "-n", str(c.repo / script)]).returncode == 0, f"{script} parses")
    py = c.repo / "docker/smoke/allreduce.py"
    try:
        compile(py.read_text(), str(py), "exec")
        err = ""
    except SyntaxError as e:
        err = str(e)
    c.expect(not err, "docker/smoke/allreduce.py compiles", err)


def check_scripts(c) -> None:
    tools = c.repo / "tools/docker"
    for name in ["build.sh", "make_base.sh", "check_image.sh", "promote.sh"]:
        path = tools / name
        c.expect(path.exists() and os.access(path, os.X_OK) and
                 subprocess.run(["bash", "-n", str(path)]).returncode == 0,
                 f"tools/docker/{name} is executable and parses")
    cases = [(["--engine", "dockr", "cpu"], "--engine 'dockr'"),
             (["--pip-cert", str(c.work / "no-such-ca.pem"), "cpu"], "no-such-ca.pem"),
             (["--pip-cert", str(c.work), "cpu"], "is not a readable file"),  # a folder
             (["--frobnicate", "cpu"], "--frobnicate")]
    for script in ["build.sh", "promote.sh"]:
        for args, needle in cases + [(["--engine", "/usr/bin/dockr", "cpu"], "'/usr/bin/dockr'")]:
            if script == "promote.sh" and args[0] == "--pip-cert":
                continue
            p = subprocess.run(["bash", str(tools / script), *args], capture_output=True, text=True,
                               timeout=60)
            c.expect(p.returncode == 2 and needle in p.stderr,
                     f"{script} {' '.join(args[:-1])} is refused (exit 2)",
                     f"rc {p.returncode} err {p.stderr!r}")
    for name in ["build.sh", "make_base.sh", "check_image.sh", "promote.sh"]:
        # --help prints the header comment only: no '#', no code after it.
        p = subprocess.run(["bash", str(tools / name), "--help"], capture_output=True, text=True, timeout=60)
        lines = p.stdout.splitlines()
        c.expect(p.returncode == 0 and lines and lines[0].startswith(name) and
                 not any(l.startswith(("#", "set ", "NAME=")) for l in lines),
                 f"{name} --help prints its usage only", f"rc {p.returncode} out {p.stdout[-300:]!r}")


def run(c) -> None:
    check_torch_index(c)
    check_smoke(c)
    check_scripts(c)
