"""--numa-binding on a fake sysfs tree (TZRUN_SYSFS_ROOT, the reader's test hook), compared with
torch's own binding functions (torch/numa/binding.py) read from the same tree.

torchrun itself cannot run here (it needs CUDA devices and numactl), so the independent reference
is torch's `_get_validated_logical_cpus_to_bind_to`, with its /sys paths redirected to the fake
tree, `torch.cuda.get_device_properties` answering the PCI address of each fake GPU (PCI bus-id
order, CUDA_VISIBLE_DEVICES applied by `torch.cuda._parse_visible_devices`), and the numactl check
stubbed. Each tzrun worker reports its own affinity (os.sched_getaffinity and
/proc/self/status Cpus_allowed_list): that is what numactl --physcpubind would have set.

The fake CPUs are the first two CPUs this test may use (a0, a1) plus ids above every real CPU
(never allowed), so the intersection with the agent's affinity is exercised too.
"""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import HOST_LIMIT, binary

ALLOWED = sorted(os.sched_getaffinity(0))
needs_two_cpus = pytest.mark.skipif(len(ALLOWED) < 2, reason=HOST_LIMIT + "needs 2 usable CPUs")
A0, A1 = (ALLOWED + [0, 1])[:2]
H = (os.cpu_count() or 2) + 64  # CPU ids no process here may use

WORKER = r'''
import json, os, sys
status = open("/proc/self/status").read()
cpus_allowed = [l.split(":", 1)[1].strip() for l in status.splitlines()
                if l.startswith("Cpus_allowed_list:")][0]
with open(os.path.join(sys.argv[1], "rank%s.json" % os.environ["LOCAL_RANK"]), "w") as f:
    json.dump({"affinity": sorted(os.sched_getaffinity(0)), "status": cpus_allowed}, f)
'''

# torch's binding on the fake tree; argv: root mode nproc gpus_json (PCI-ordered addresses).
REFERENCE = r'''
import builtins, json, os, sys, types
import torch
from torch.numa import binding as b
root, mode, nproc, gpus = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
remap = lambda p: root + p[len("/sys"):] if p.startswith("/sys/") else p
b.open = lambda p, *a, **k: builtins.open(remap(p), *a, **k)
b.os = types.SimpleNamespace(listdir=lambda p: os.listdir(remap(p)), path=os.path,
                             sched_getaffinity=os.sched_getaffinity)
b.shutil = types.SimpleNamespace(which=lambda name: "/usr/bin/" + name)
visible = torch.cuda._parse_visible_devices()
past = [i for i, v in enumerate(visible) if v >= len(gpus)]  # _device_count_nvml's trim
visible = visible[:past[0]] if past else visible
b._get_gpu_count = lambda: len(visible)
def props(i):
    dom, bus, dev = gpus[visible[i]].replace(".", ":").split(":")[:3]
    return types.SimpleNamespace(pci_domain_id=int(dom, 16), pci_bus_id=int(bus, 16),
                                 pci_device_id=int(dev, 16))
torch.cuda.get_device_properties = props
opts = b.NumaOptions(affinity_mode=b.AffinityMode(mode))
out = []
for i in range(nproc):
    try:
        out.append(sorted(b._get_validated_logical_cpus_to_bind_to(gpu_index=i, numa_options=opts)))
    except Exception as e:
        out.append("%s: %s" % (type(e).__name__, e))
json.dump({"visible": visible, "cpus": out}, sys.stdout)
'''


def cpu_list(cpus):
    return ",".join(str(c) for c in sorted(cpus))


class FakeSysfs:
    """A /sys subset: NUMA nodes, CPU topology and caches, PCI devices."""

    def __init__(self, root: pathlib.Path):
        self.root = root
        self.gpus = []  # addresses of the CUDA-visible GPUs, any order

    def write(self, rel, text):
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text + "\n")

    def node(self, n, cpus):
        self.write(f"devices/system/node/node{n}/cpulist", cpu_list(cpus))

    def possible(self, text):
        self.write("devices/system/node/possible", text)

    def cpu(self, c, package, siblings, l3):
        base = f"devices/system/cpu/cpu{c}"
        self.write(f"{base}/topology/physical_package_id", str(package))
        self.write(f"{base}/topology/thread_siblings_list", cpu_list(siblings))
        for index, (kind, level, shared) in enumerate(
                [("Data", 1, [c]), ("Instruction", 1, [c]), ("Unified", 2, [c]),
                 ("Unified", 3, l3)]):
            self.write(f"{base}/cache/index{index}/type", kind)
            self.write(f"{base}/cache/index{index}/level", str(level))
            self.write(f"{base}/cache/index{index}/shared_cpu_list", cpu_list(shared))

    def device(self, addr, numa, vendor="0x10de", cls="0x030200", driver="nvidia"):
        d = self.root / "bus/pci/devices" / addr
        d.mkdir(parents=True)
        for name, value in (("vendor", vendor), ("class", cls), ("device", "0x2330"),
                            ("numa_node", str(numa))):
            (d / name).write_text(value + "\n")
        os.symlink(f"../../../bus/pci/drivers/{driver}", d / "driver")
        if vendor == "0x10de" and cls[:6] in ("0x0302", "0x0300") and driver == "nvidia":
            self.gpus.append(addr)

    def pci_ordered(self):
        return sorted(self.gpus, key=lambda a: [int(x, 16) for x in a.replace(".", ":").split(":")])


def two_sockets(root):
    """Socket 0 = node 0 {a0, h0}, socket 1 = node 1 {a1, h1}, no SMT; the GPU on node 1 has the
    lower PCI bus id (so it is CUDA device 0); a passed-through GPU and an NVSwitch are not
    CUDA's."""
    s = FakeSysfs(root)
    s.possible("0-1")
    s.node(0, [A0, H])
    s.node(1, [A1, H + 1])
    for c, pkg, l3 in ((A0, 0, [A0, H]), (H, 0, [A0, H]), (A1, 1, [A1, H + 1]),
                       (H + 1, 1, [A1, H + 1])):
        s.cpu(c, pkg, [c], l3)
    s.device("0000:b3:00.0", 0)
    s.device("0000:1b:00.0", 1)
    s.device("0000:3d:00.0", 0, driver="vfio-pci")
    s.device("0000:4e:00.0", 0, cls="0x068000")
    return s


def smt_node(root):
    """One socket: node 0 has two physical cores {a0, h0} and {a1, h1} (SMT siblings) sharing one
    L3, node 1 only CPUs nobody may use; GPUs 0 and 1 on node 0 (one says numa_node -1), GPU 2
    on node 1."""
    s = FakeSysfs(root)
    s.possible("0-1")
    s.node(0, [A0, A1, H, H + 1])
    s.node(1, [H + 2])
    for c, sib in ((A0, [A0, H]), (H, [A0, H]), (A1, [A1, H + 1]), (H + 1, [A1, H + 1])):
        s.cpu(c, 0, sib, [A0, A1, H, H + 1])
    s.cpu(H + 2, 0, [H + 2], [H + 2])
    s.device("0000:1b:00.0", 0)
    s.device("0000:3d:00.0", -1)
    s.device("0000:b3:00.0", 1)
    return s


def reference(sysfs, mode, nproc, env):
    out = subprocess.run([sys.executable, "-c", REFERENCE, str(sysfs.root), mode, str(nproc),
                          json.dumps(sysfs.pci_ordered())],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def run_tzrun(tmp_path, sysfs, mode, nproc, extra_env=None, dry=False):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = clean_env({"TZRUN_SYSFS_ROOT": str(sysfs.root), **(extra_env or {})})
    argv = [binary("tzrun"), f"--numa-binding={mode}", f"--nproc-per-node={nproc}",
            *(["--dry-run"] if dry else []), str(script), str(out)]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120), out


def worker_cpus(out, nproc):
    result = []
    for lr in range(nproc):
        r = json.loads((out / f"rank{lr}.json").read_text())
        assert r["status"] == compact(r["affinity"]), r  # the kernel's view agrees
        result.append(r["affinity"])
    return result


def compact(cpus):
    parts, cpus = [], sorted(cpus)
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        parts.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(parts)


def clean_env(extra=None):
    """The test's environment without the host's CUDA variables, the venv first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDA_")}
    env["PATH"] = str(pathlib.Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("PYTHON_EXEC", None)
    env.update(extra or {})
    return env


CASES = [  # (topology, mode, expected CPUs of local ranks 0 and 1)
    (two_sockets, "node", [[A1], [A0]]),
    (two_sockets, "socket", [[A1], [A0]]),
    (two_sockets, "exclusive", [[A1], [A0]]),
    (two_sockets, "core-complex", [[A1], [A0]]),
    (smt_node, "node", [[A0, A1], [A0, A1]]),
    (smt_node, "socket", "ValueError"),  # node 1 has no usable CPU: torch's min() raises
    (smt_node, "exclusive", [[A0], [A1]]),
    (smt_node, "core-complex", [[A0, A1], [A0, A1]]),  # one L3 group: GPU 1 wraps to it
]


@needs_two_cpus
@pytest.mark.parametrize("topology,mode,expected", CASES,
                         ids=[f"{t.__name__}-{m}" for t, m, _ in CASES])
def test_workers_get_torchs_cpus(tmp_path, topology, mode, expected):
    sysfs = topology(tmp_path / "sys")
    ref = reference(sysfs, mode, 2, clean_env())
    res, out = run_tzrun(tmp_path, sysfs, mode, 2)
    if isinstance(expected, str):  # torch raises: tzrun refuses before starting any worker
        assert all(isinstance(c, str) and c.startswith(expected) for c in ref["cpus"]), ref
        assert res.returncode == 2, res.stderr
        assert f"--numa-binding={mode}: cannot bind local rank 0" in res.stderr, res.stderr
        assert "NUMA node 1 has no CPU this process may use" in res.stderr, res.stderr
        assert not list(out.iterdir())
        return
    assert ref["cpus"] == expected, ref
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert worker_cpus(out, 2) == expected


@needs_two_cpus
def test_dry_run_shows_the_binding_and_checks_it(tmp_path):
    sysfs = smt_node(tmp_path / "sys")
    res, _ = run_tzrun(tmp_path, sysfs, "exclusive", 2, dry=True)
    assert res.returncode == 0, res.stderr
    assert f"[local_rank 0] cpus: {A0}\n" in res.stdout, res.stdout
    assert f"[local_rank 1] cpus: {A1}\n" in res.stdout, res.stdout
    assert "numa_binding=exclusive" in res.stdout
    res, _ = run_tzrun(tmp_path, sysfs, "exclusive", 3, dry=True)  # GPU 2's node: no usable CPU
    assert res.returncode == 2 and "cannot bind local rank 2" in res.stderr, res.stderr


@needs_two_cpus
def test_a_local_rank_without_a_gpu_fails_before_any_worker_starts(tmp_path):
    sysfs = two_sockets(tmp_path / "sys")
    res, out = run_tzrun(tmp_path, sysfs, "node", 3)
    assert res.returncode == 2, res.stderr
    assert ("--numa-binding=node: local rank 2 has no GPU to bind to" in res.stderr
            and "2 NVIDIA GPU(s) are visible (0=0000:1b:00.0, 1=0000:b3:00.0" in res.stderr
            and "--nproc-per-node" in res.stderr), res.stderr
    assert not list(out.iterdir())
    res, out = run_tzrun(tmp_path, sysfs, "node", 1, {"CUDA_VISIBLE_DEVICES": "GPU-1234"})
    assert res.returncode == 2 and "CUDA_VISIBLE_DEVICES=GPU-1234 names GPUs by UUID" in res.stderr
    assert not list(out.iterdir())


@pytest.mark.parametrize("visible", [None, "GPU-1234", "0"])
def test_a_machine_without_nvidia_gpus_says_so_first(tmp_path, visible):
    """No NVIDIA GPU at all (a passed-through one is not CUDA's): the error names that, whatever
    CUDA_VISIBLE_DEVICES holds (not its UUID form), exits 2 without the usage block (the values
    parsed; they do not fit the machine), and starts nothing."""
    sysfs = FakeSysfs(tmp_path / "sys")
    sysfs.possible("0")
    sysfs.node(0, [A0])
    sysfs.device("0000:3d:00.0", 0, driver="vfio-pci")
    res, out = run_tzrun(tmp_path, sysfs, "node", 2,
                         {"CUDA_VISIBLE_DEVICES": visible} if visible is not None else {})
    assert res.returncode == 2, res.stderr
    assert ("tzrun: error: --numa-binding=node: local rank 0 has no GPU to bind to: this machine "
            "has no NVIDIA GPU (none is bound to the nvidia driver under "
            f"{sysfs.root}/bus/pci/devices)") in res.stderr, res.stderr
    assert "drop --numa-binding on a machine without GPUs" in res.stderr
    assert "UUID" not in res.stderr and "usage:" not in res.stderr, res.stderr
    assert not list(out.iterdir())


def three_gpus(root):
    """CUDA devices told apart by their CPUs: GPU k on node k, nodes {a0}, {a1}, {a0, a1}."""
    s = FakeSysfs(root)
    s.possible("0-2")
    for n, cpus in enumerate(([A0], [A1], [A0, A1])):
        s.node(n, cpus)
    for c in (A0, A1):
        s.cpu(c, 0, [c], [c])
    for n, addr in enumerate(("0000:1b:00.0", "0000:3d:00.0", "0000:b3:00.0")):
        s.device(addr, n)
    return s


@needs_two_cpus
@pytest.mark.parametrize("visible", ["2,0", "1gpu2,2ampere", " 1 , 2 ", "+2", "0,-1,1", "0,x,1",
                                     "1,5,0", "0,1,0", "", "7"])
def test_cuda_visible_devices_as_torch_parses_it(tmp_path, visible):
    sysfs = three_gpus(tmp_path / "sys")
    env = {"CUDA_VISIBLE_DEVICES": visible}
    ref = reference(sysfs, "node", 1, clean_env(env))
    by_node = {compact([A0]): 0, compact([A1]): 1, compact([A0, A1]): 2}
    n = len(ref["visible"])
    if n == 0:
        res, _ = run_tzrun(tmp_path, sysfs, "node", 1, env, dry=True)
        assert res.returncode == 2 and "no NVIDIA GPU is visible" in res.stderr, res.stderr
        return
    res, _ = run_tzrun(tmp_path, sysfs, "node", n, env, dry=True)
    assert res.returncode == 0, res.stderr
    lines = [line for line in res.stdout.splitlines() if "] cpus: " in line]
    assert [by_node[line.split("cpus: ")[1]] for line in lines] == ref["visible"]
    res, _ = run_tzrun(tmp_path, sysfs, "node", n + 1, env, dry=True)
    assert res.returncode == 2 and f"local rank {n} has no GPU" in res.stderr, res.stderr
