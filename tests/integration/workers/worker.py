"""Configurable worker for tzrun supervision tests (stdlib only, starts fast).

usage: worker.py OUTDIR [options]

Every worker appends "<restart_count> <local_rank> <pid>" to OUTDIR/starts.txt, records
its SIGHUP disposition in OUTDIR/sighup<local_rank>.txt, installs recording handlers
for SIGTERM/SIGINT/SIGHUP/SIGQUIT (the handler writes OUTDIR/signal<local_rank>.txt and
then dies of that signal, like a default-disposition process), and finally touches
OUTDIR/ready<local_rank>.<restart_count>. Options pick what happens next; actions that end
a worker (--exit-code, --self-signal, --fail-attempts) first wait until every rank is ready.
"""
import argparse
import os
import signal
import subprocess
import sys
import time


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("outdir")
    p.add_argument("--only-rank", type=int, default=None,
                   help="apply --exit-code/--self-signal only on this LOCAL_RANK")
    p.add_argument("--exit-code", type=int, default=None)
    p.add_argument("--self-signal", type=int, default=None)
    p.add_argument("--delay", type=float, default=0.0, help="before the action")
    p.add_argument("--sleep", type=float, default=60.0, help="otherwise sleep, then exit 0")
    p.add_argument("--ignore-term", action="store_true", help="ignore SIGTERM (not recorded)")
    p.add_argument("--grandchild", action="store_true",
                   help="start `sleep 300` in our process group; pid -> grandchild<rank>.pid")
    p.add_argument("--daemon", action="store_true",
                   help="start `sleep 300` in a new session; pid -> daemon<rank>.pid")
    p.add_argument("--fail-attempts", type=int, default=None,
                   help="once all ranks are ready: exit 1 while TORCHELASTIC_RESTART_COUNT < N,"
                        " else exit 0")
    p.add_argument("--print", default=None, help="print this line to stdout and stderr")
    args = p.parse_args()

    rank = int(os.environ["LOCAL_RANK"])
    attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    out = args.outdir

    def path(name: str) -> str:
        return os.path.join(out, name)

    with open(path("starts.txt"), "a") as f:
        f.write(f"{attempt} {rank} {os.getpid()}\n")
    with open(path(f"sighup{rank}.txt"), "w") as f:
        f.write("ignored" if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN else "default")

    def record(signum, _frame):
        with open(path(f"signal{rank}.txt"), "w") as f:
            f.write(str(signum))
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        if signal.getsignal(s) != signal.SIG_IGN:
            signal.signal(s, record)
    if args.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    if args.grandchild:
        gc = subprocess.Popen(["sleep", "300"])
        with open(path(f"grandchild{rank}.pid"), "w") as f:
            f.write(str(gc.pid))
    if args.daemon:
        d = subprocess.Popen(["sleep", "300"], start_new_session=True)
        with open(path(f"daemon{rank}.pid"), "w") as f:
            f.write(str(d.pid))
    if args.print is not None:
        print(args.print, flush=True)
        print(args.print, file=sys.stderr, flush=True)

    open(path(f"ready{rank}.{attempt}"), "w").close()

    def wait_all_ready():
        # every rank of this attempt has started, recorded itself and installed its
        # handlers before anyone acts (the box may be slow)
        n = int(os.environ["LOCAL_WORLD_SIZE"])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(
                os.path.exists(path(f"ready{r}.{attempt}")) for r in range(n)):
            time.sleep(0.01)

    if args.fail_attempts is not None:
        wait_all_ready()
        return 1 if attempt < args.fail_attempts else 0

    applies = args.only_rank is None or args.only_rank == rank
    if applies and (args.exit_code is not None or args.self_signal is not None):
        wait_all_ready()
        time.sleep(args.delay)
        if args.self_signal is not None:
            if args.self_signal not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(args.self_signal, signal.SIG_DFL)
            os.kill(os.getpid(), args.self_signal)
            time.sleep(10)
        return args.exit_code

    time.sleep(args.sleep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
