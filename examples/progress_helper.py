"""Progress reports for tzrun --hang-timeout (docs/fault-tolerance.md), for any PyTorch script.

    from progress_helper import report_progress
    for step, batch in enumerate(loader):
        ...
        report_progress(step, "train")      # cheap: writes at most twice a second

Without tzrun --hang-timeout (TZRUN_PROGRESS_FILE unset) every call does nothing.
"""
import os
import time

_PATH = os.environ.get("TZRUN_PROGRESS_FILE")
_last = 0.0


def report_progress(step: int, phase: str = "train", every: float = 0.5) -> None:
    """Tells the tzrun agent this rank reached `step` in `phase` (train, eval, checkpoint, ...)."""
    global _last
    now = time.time()
    if _PATH is None or now - _last < every:
        return
    _last = now
    tmp = f"{_PATH}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(f"{int(step)} {phase} {now:.3f}\n")
    os.replace(tmp, _PATH)  # atomic: the agent never reads half a line
