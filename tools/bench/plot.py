#!/usr/bin/env python3
"""Draws the benchmark plots of docs/performance.md from tools/bench/figures.json.

  .venv/bin/pip install matplotlib          # once (not part of scripts/setup.sh)
  .venv/bin/python tools/bench/plot.py      # rewrites docs/img/*.png

Options: --figures FILE (default tools/bench/figures.json), --out DIR (default docs/img).
figures.json holds the recorded figures, one section per benchmark (launch, store, rendezvous,
embedding, training, checkpoint), each with the command that produced them; a value of null is
not measured yet and is left out of the plot (a section with no values at all gets no PNG, and the
script says so). The PNGs carry no timestamp, so rerunning on unchanged figures rewrites the same
bytes. Exit status: 0, or 2 when figures.json is missing or malformed.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

ROOT = pathlib.Path(__file__).resolve().parents[2]
TZRUN = "#1f77b4"
OTHER = "#ff7f0e"
THIRD = "#2ca02c"
PNG_METADATA = {"Software": None}  # no matplotlib version or date: reproducible bytes


def _save(fig, out: pathlib.Path, name: str, written: list[str]) -> None:
    path = out / name
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata=PNG_METADATA)
    plt.close(fig)
    written.append(str(path))


def _bars(ax, labels, series, *, log=False, unit=""):
    """Grouped bars: series = [(name, values, colour)]; None values are skipped."""
    n = len(series)
    width = 0.8 / n
    for k, (name, values, colour) in enumerate(series):
        xs = [i + (k - (n - 1) / 2) * width for i in range(len(labels))]
        pts = [(x, v) for x, v in zip(xs, values) if v is not None]
        if not pts:
            continue
        bars = ax.bar([p[0] for p in pts], [p[1] for p in pts], width, label=name, color=colour)
        ax.bar_label(bars, fmt="%g", fontsize=7, padding=1)
    ax.set_xticks(range(len(labels)), labels)
    if log:
        ax.set_yscale("log")
    if unit:
        ax.set_ylabel(unit)
    ax.legend(fontsize=8)


def plot_launch(sec, out, written):
    rows = sec["rows"]
    nprocs = sorted({r["nproc"] for r in rows})
    metrics = ["launch->barrier", "crash->restart"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, metric in zip(axes, metrics):
        by = {r["nproc"]: r for r in rows if r["metric"] == metric}
        _bars(ax, [str(n) for n in nprocs],
              [("tzrun", [by.get(n, {}).get("tzrun_ms") for n in nprocs], TZRUN),
               ("torchrun", [by.get(n, {}).get("torchrun_ms") for n in nprocs], OTHER)],
              log=True, unit="ms (log scale, lower is better)")
        ax.set_xlabel("workers (--nproc-per-node)")
        ax.set_title(metric)
    fig.suptitle(sec["title"], fontsize=10)
    _save(fig, out, "launch.png", written)


def plot_store(sec, out, written):
    rows = sec["rows"]
    servers = [("tzrun", TZRUN), ("torch-nodns", OTHER), ("torch", THIRD)]

    def pick(prefix, metric):
        sel = [r for r in rows if r["scenario"].startswith(prefix) and r["metric"] == metric]
        return [r["scenario"].replace(prefix, "").replace(" conns", "").strip() for r in sel], sel

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    panels = [("mix ", "ops/s", "connections", "ops/s (higher is better)", False),
              ("mix ", "server CPU per op (us)", "connections", "us of server CPU per op (lower is better)", False),
              ("rendezvous ", "total (s)", "clients", "s (log scale, lower is better)", True)]
    for ax, (prefix, metric, xlabel, unit, log) in zip(axes, panels):
        labels, sel = pick(prefix, metric)
        _bars(ax, labels, [(s, [r.get(s) for r in sel], c) for s, c in servers], log=log, unit=unit)
        ax.set_xlabel(xlabel)
        ax.set_title(f"{prefix.strip()}: {metric}")
    fig.suptitle(sec["title"] + " (torch rendezvous: did not finish)", fontsize=10)
    _save(fig, out, "store.png", written)


def plot_rendezvous(sec, out, written):
    rows = sec["rows"]
    fig, ax = plt.subplots(figsize=(7, 3.8))
    labels = [r["scenario"].replace("rendezvous ", "").replace("node loss -> restarted", "node loss")
              for r in rows]
    _bars(ax, labels, [("tzrun", [r.get("tzrun_s") for r in rows], TZRUN),
                       ("torchrun", [r.get("torchrun_s") for r in rows], OTHER)],
          unit="s (lower is better)")
    ax.set_title(sec["title"], fontsize=10)
    _save(fig, out, "rendezvous.png", written)


def plot_embedding(sec, out, written):
    rows = [r for r in sec["rows"] if r.get("gb_per_s") is not None]
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(7, 3.8))
    colours = {"stream": THIRD, "torchrec": OTHER, "tzrec": TZRUN}
    labels = [r["impl"] for r in rows]
    bars = ax.bar(range(len(rows)), [r["gb_per_s"] for r in rows],
                  color=[next((c for k, c in colours.items() if r["impl"].startswith(k)), "grey")
                         for r in rows])
    ax.bar_label(bars, labels=[
        f"{r['gb_per_s']:g} GB/s" + (f"\n{r['lookups_per_s'] / 1e6:.2f} M lookups/s"
                                      if r.get("lookups_per_s") else "") for r in rows],
        fontsize=7, padding=1)
    ax.set_xticks(range(len(rows)), labels)
    ax.set_yscale("log")
    ax.set_ylabel("GB/s of embedding traffic (log scale)")
    ax.set_title(sec["title"], fontsize=9)
    _save(fig, out, "embedding.png", written)
    return True


def plot_simple(sec, out, written, name, value_key, label_key, unit):
    rows = [r for r in sec["rows"] if r.get(value_key) is not None]
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(7, 3.4))
    bars = ax.barh(range(len(rows)), [r[value_key] for r in rows], color=TZRUN)
    ax.bar_label(bars, fmt="%g", fontsize=8, padding=2)
    ax.set_yticks(range(len(rows)), [r[label_key] for r in rows], fontsize=8)
    ax.set_xlabel(unit)
    ax.set_title(sec["title"], fontsize=9)
    _save(fig, out, name, written)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description="Draw docs/img/*.png from tools/bench/figures.json")
    parser.add_argument("--figures", type=pathlib.Path, default=ROOT / "tools/bench/figures.json")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "docs/img")
    args = parser.parse_args()
    try:
        figures = json.loads(args.figures.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        print(f"plot.py: cannot read {args.figures}: {e}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    skipped: list[str] = []
    try:
        plot_launch(figures["launch"], args.out, written)
        plot_store(figures["store"], args.out, written)
        plot_rendezvous(figures["rendezvous"], args.out, written)
        if not plot_embedding(figures["embedding"], args.out, written):
            skipped.append("embedding")
        if not plot_simple(figures["training"], args.out, written, "training.png",
                           "samples_per_s", "impl", "samples/s (higher is better)"):
            skipped.append("training")
        if not plot_simple(figures["checkpoint"], args.out, written, "checkpoint.png",
                           "gb_per_s", "what", "GB/s (higher is better)"):
            skipped.append("checkpoint")
    except (KeyError, TypeError) as e:
        print(f"plot.py: {args.figures} is malformed ({type(e).__name__}: {e}); every section "
              "needs 'title' and 'rows' as in the committed file", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    for name in skipped:
        print(f"skipped {name}: no recorded values in {args.figures.name} yet")
    return 0


if __name__ == "__main__":
    sys.exit(main())
