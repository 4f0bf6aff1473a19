"""Helpers and data fixtures shared by the tzrec_train job tests (test_train_job.py: the models,
checkpoints and resume; test_train_job_usage.py: export + predict, bad input, training options).

The module-scoped fixtures (criteo, movielens, criteo_generated, movielens_generated,
small_dlrm) are imported by each test module, so each module builds its own copy of the data.
"""
import csv
import json
import os
import pathlib
import random
import re
import subprocess
import sys
import time

import pytest

from conftest import BIN, ROOT, SHARED, binary

CONFIGS = ROOT / "examples" / "configs"
TOOLS = ROOT / "tools"
sys.path.insert(0, str(TOOLS / "config"))
import pbtext  # noqa: E402 (tools/config/pbtext.py: .config text -> protobuf-JSON-shaped dict)
CRITEO_SRC = SHARED / "data" / "criteo_dac_10k" / "train-10k.txt"
MOVIELENS_SRC = SHARED / "data" / "movielens_100k"
VENV_BIN = str(pathlib.Path(sys.executable).parent)
SMALL_BUCKETS = 5000
BATCH = 64  # the DLRM example's batch size (per rank)


# --------------------------------------------------------------------------------------------
# helpers


def job_env() -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PET_", "TORCHELASTIC_")) and k not in
           ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    # tzrec_train is found on PATH by its bare name, as in the README's main job.
    env["PATH"] = os.pathsep.join([str(BIN), VENV_BIN, env.get("PATH", "/usr/bin:/bin")])
    # tzrun sets OMP_NUM_THREADS=1 only for nproc > 1; a 1-rank job with libtorch's default
    # intra-op threads is ~20x slower on 2 cores shared with a parallel ctest.
    env["OMP_NUM_THREADS"] = "1"
    return env


def details(proc) -> str:
    return f"exit {proc.returncode}\n--- stdout ---\n{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-6000:]}"


def train_cmd(config, model_dir, nproc, train=None, evl=None, edit=None, continue_train=False,
              tee=False):
    cmd = [binary("tzrun"), "--standalone", f"--nproc-per-node={nproc}"]
    if tee:
        cmd += ["--tee=3"]
    cmd += ["tzrec_train", "--pipeline_config_path", str(config), "--model_dir", str(model_dir)]
    if train is not None:
        cmd += ["--train_input_path", str(train)]
    if evl is not None:
        cmd += ["--eval_input_path", str(evl)]
    if edit:
        cmd += ["--edit_config_json", json.dumps(edit)]
    if continue_train:
        cmd += ["--continue_train"]
    return cmd


def run_job(*args, check=True, timeout=240, **kw):
    binary("tzrec_train")
    proc = subprocess.run(train_cmd(*args, **kw), capture_output=True, text=True, timeout=timeout,
                          env=job_env())
    if check:
        assert proc.returncode == 0, details(proc)
    return proc


def tzrec(*args, check=True, timeout=120):
    proc = subprocess.run([binary("tzrec_train"), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=job_env())
    if check:
        assert proc.returncode == 0, details(proc)
    return proc


def metrics(model_dir) -> dict:
    return json.loads((pathlib.Path(model_dir) / "metrics.json").read_text())


def steps_edit(num_steps, save_every=None, log_every=5, **more) -> dict:
    edit = {"train_config.num_steps": num_steps, "train_config.num_epochs": 0,
            "train_config.log_step_count_steps": log_every,
            "train_config.save_checkpoints_steps": save_every or num_steps}
    edit.update(more)
    return edit


def predicted_aucs(stdout: str) -> dict:
    """The AUCs predict prints: {"auc": v} or {"auc_<tower>": v, ...}."""
    line = [ln for ln in stdout.splitlines() if " rows, auc" in ln][-1]
    return {k: float(v) for k, v in re.findall(r"\b(auc(?:_\w+)?) ([0-9.]+)", line)}


def train_restore_export_predict(cfg, tmp_path, train, evl, first, total, edit=None,
                                 timeout=120):
    """Train `first` steps on 2 ranks, continue to `total` on 1 rank (restoring the 2-rank
    checkpoint), export, predict `evl`: predict's AUCs must equal the job's final eval AUCs.
    Returns (metrics after the 2-rank part, final metrics)."""
    md = tmp_path / "m"
    edit = edit or {}
    run_job(cfg, md, 2, train, evl, steps_edit(first, log_every=first, **edit), timeout=timeout)
    first_metrics = metrics(md)
    assert first_metrics["world_size"] == 2 and first_metrics["global_step"] == first, first_metrics
    proc = run_job(cfg, md, 1, train, evl, steps_edit(total, log_every=total, **edit),
                   continue_train=True, timeout=timeout)
    assert f"restored {md / f'model.ckpt-{first}'} (step {first}" in proc.stdout, details(proc)
    m = metrics(md)
    assert m["global_step"] == total and m["world_size"] == 1, m
    export = tmp_path / "export"
    tzrec("export", "--model_dir", md, "--export_dir", export)
    proc = tzrec("predict", "--export_dir", export, "--input_path", evl, "--output_path",
                 tmp_path / "pred.csv", "--writer_type", "CsvWriter")
    got = predicted_aucs(proc.stdout)
    want = {k[len("eval_"):]: v for k, v in m.items()
            if k == "eval_auc" or k.startswith("eval_auc_")}
    assert want and set(got) == set(want), (got, m, details(proc))
    for k, v in want.items():
        assert got[k] == pytest.approx(v, abs=1e-4), (k, got, m)
    return first_metrics, m


def checkpoints(model_dir) -> dict:
    """step -> path of every model.ckpt-STEP directory (not the .tmp ones)."""
    out = {}
    for p in pathlib.Path(model_dir).glob("model.ckpt-*"):
        if p.is_dir():
            out[int(p.name.split("-")[-1])] = p
    return dict(sorted(out.items()))


def ckpt_metadata(path) -> dict:
    return json.loads((pathlib.Path(path) / "metadata.json").read_text())


def assert_complete(path):
    """metadata.json parses and every file it lists exists with the recorded size."""
    path = pathlib.Path(path)
    meta_file = path / "metadata.json"
    assert meta_file.exists(), f"{path} has no metadata.json: {sorted(p.name for p in path.iterdir())}"
    meta = json.loads(meta_file.read_text())
    assert meta["files"], f"{meta_file} lists no files"
    for f in meta["files"]:
        fp = path / f["name"]
        assert fp.exists(), f"{fp} listed in metadata.json is missing"
        assert fp.stat().st_size == f["bytes"], \
            f"{fp}: {fp.stat().st_size} bytes on disk, metadata.json records {f['bytes']}"
    return meta


def consumed_ranges(meta) -> list:
    """Union of every rank's consumed row ranges, sorted and merged."""
    ranges = sorted(tuple(r) for c in meta["data_cursors"] for r in c["consumed"])
    merged = []
    for b, e in ranges:
        if merged and b <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([b, e])
    return merged


def rows_in(ranges) -> int:
    return sum(e - b for b, e in ranges)


def per_rank_rows(meta) -> int:
    """Rows consumed summed over ranks (counts a row twice if two ranks consumed it)."""
    return sum(e - b for c in meta["data_cursors"] for b, e in c["consumed"])


def row_set(ranges) -> set:
    return {r for b, e in ranges for r in range(b, e)}


def load_pt(path) -> dict:
    import torch
    obj = torch.load(str(path), map_location="cpu", weights_only=True)
    assert isinstance(obj, dict), f"{path}: torch.load gave {type(obj)}, expected a dict"
    return obj


def job_pids(marker: str) -> list:
    """Pids of live processes whose command line mentions `marker` (a unique tmp path)."""
    pids = []
    for d in pathlib.Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmdline = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            pids.append(int(d.name))
    return pids


def wait_no_job(marker: str, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not job_pids(marker):
            return
        time.sleep(0.1)
    pytest.fail(f"processes of the job are still alive {timeout} s after it ended: {job_pids(marker)}")


def load_config(base: str) -> dict:
    """The example examples/configs/<base> (protobuf text) as a dict shaped like its protobuf
    JSON: repeated fields are lists (tools/config/pbtext.py reads them from our .proto files)."""
    return pbtext.load(CONFIGS / base)


def write_config(cfg: dict, out) -> pathlib.Path:
    """Writes `cfg` as protobuf JSON (tzrec_train reads a file starting with '{' as such)."""
    out = pathlib.Path(out)
    out.write_text(json.dumps(cfg, indent=2))
    return out


def derived_config(tmp_path, base: str, mutate, name="config.json") -> pathlib.Path:
    """examples/configs/<base> changed by mutate(dict), written as protobuf JSON to tmp_path/name."""
    cfg = load_config(base)
    mutate(cfg)
    return write_config(cfg, tmp_path / name)


def small_buckets(cfg):
    for f in cfg["feature_configs"]:
        if "id_feature" in f and "hash_bucket_size" in f["id_feature"]:
            f["id_feature"]["hash_bucket_size"] = SMALL_BUCKETS


# --------------------------------------------------------------------------------------------
# data (per module; the sources are read-only)


def run_tool(*args):
    proc = subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, details(proc)
    return proc


@pytest.fixture(scope="module")
def criteo(tmp_path_factory):
    if not CRITEO_SRC.exists():
        pytest.skip(f"{CRITEO_SRC} is absent (needs ../shared/data/criteo_dac_10k)")
    out = tmp_path_factory.mktemp("criteo")
    run_tool(TOOLS / "data" / "criteo_split.py", "--src", CRITEO_SRC, "--out", out)
    assert sum(1 for _ in open(out / "train.txt", "rb")) == 8000
    assert sum(1 for _ in open(out / "eval.txt", "rb")) == 2000
    return out


@pytest.fixture(scope="module")
def movielens(tmp_path_factory):
    if not (MOVIELENS_SRC / "ml-100k.inter").exists():
        pytest.skip(f"{MOVIELENS_SRC} is absent (needs ../shared/data/movielens_100k)")
    out = tmp_path_factory.mktemp("movielens")
    run_tool(TOOLS / "data" / "movielens_join.py", "--src", MOVIELENS_SRC, "--out", out)
    return out


def write_criteo_like(path, rows, seed):
    """Random rows in the Criteo DAC text layout of criteo_split.py's output (tab-separated, no
    header: label, I1..I13, C1..C26 as 8-digit hex; some fields empty, as in the real data)."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(rows):
            ints = ["" if rng.random() < 0.1 else str(rng.randrange(1000)) for _ in range(13)]
            cats = ["" if rng.random() < 0.05 else f"{rng.getrandbits(32):08x}" for _ in range(26)]
            f.write("\t".join([str(rng.randrange(2)), *ints, *cats]) + "\n")


@pytest.fixture(scope="module")
def criteo_generated(tmp_path_factory):
    """Generated Criteo-layout train.txt / eval.txt: the bad-input tests never need ../shared."""
    out = tmp_path_factory.mktemp("criteo_generated")
    write_criteo_like(out / "train.txt", 1024, seed=1)
    write_criteo_like(out / "eval.txt", 256, seed=2)
    return out


MOVIELENS_COLUMNS = ["user_id", "item_id", "rating", "timestamp", "age", "gender", "occupation",
                     "zip_code", "movie_title", "release_year", "class", "label"]


@pytest.fixture(scope="module")
def movielens_generated(tmp_path_factory):
    """Generated rows in movielens_join.py's train.csv / eval.csv layout (user ids 1..943)."""
    out = tmp_path_factory.mktemp("movielens_generated")
    rng = random.Random(3)
    genres = ["Action", "Comedy", "Drama", "Romance", "Thriller"]
    for name, rows in (("train.csv", 1024), ("eval.csv", 256)):
        with open(out / name, "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(MOVIELENS_COLUMNS)
            for t in range(rows):
                rating = rng.randint(1, 5)
                w.writerow([rng.randint(1, 943), rng.randint(1, 1682), rating, 874724710 + t,
                            rng.randint(7, 73), rng.choice("MF"), rng.choice(["student", "other"]),
                            f"{rng.randint(10000, 99999)}", f"Movie {rng.randint(1, 500)}",
                            rng.randint(1930, 1998), " ".join(rng.sample(genres, 2)),
                            int(rating >= 4)])
    return out


@pytest.fixture(scope="module")
def small_dlrm(tmp_path_factory):
    """The DLRM Criteo example with SMALL_BUCKETS-row hash tables (fast checkpoints)."""
    return derived_config(tmp_path_factory.mktemp("small_dlrm"), "dlrm_criteo.config", small_buckets)


def small_job(small_dlrm, criteo, model_dir, nproc, edit, **kw):
    return run_job(small_dlrm, model_dir, nproc, criteo / "train.txt", criteo / "eval.txt", edit, **kw)


# --------------------------------------------------------------------------------------------
# 1-3, 9: the models on real (and synthetic) data
