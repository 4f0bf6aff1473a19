"""What tzrun tells the user: dry-run contents, log levels, port-busy and log-dir messages."""
import os
import socket
import subprocess

from conftest import binary, free_port


def tzrun(*args, env_extra=None, timeout=60):
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    env.update(env_extra or {})
    return subprocess.run([binary("tzrun"), *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def test_dry_run_prints_resolved_configuration_and_every_torchrun_variable():
    # A platform-like RANK equal to the value tzrun computes must still be shown.
    p = tzrun("--dry-run", "--standalone", "--nproc-per-node=2", "--max-restarts=3",
              "--no-python", "/bin/true", env_extra={"RANK": "1"})
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "resolved configuration:" in out
    assert "max_restarts=3" in out and "rdzv_backend=c10d" in out
    assert "  exit_barrier_timeout=300s straggler_warning=60s straggler_timeout=off\n" in out
    rank1 = out.split("[local_rank 1]")[1]
    assert "  RANK=1\n" in rank1
    assert "  MASTER_PORT=<free port>\n" in rank1 and "MASTER_PORT=0" not in out


def test_dry_run_shows_the_exit_barrier_and_straggler_settings():
    p = tzrun("--dry-run", "--exit-barrier-timeout=2.5", "--straggler-warning=0",
              "--straggler-timeout=30", "--no-python", "/bin/true")
    assert p.returncode == 0, p.stderr
    assert "  exit_barrier_timeout=2.5s straggler_warning=off straggler_timeout=30s\n" in p.stdout


def test_log_level_off_silences_warnings():
    p = tzrun("--log-level", "off", "--nproc-per-node=2", "--master-port", str(free_port()),
              "--no-python", "/bin/true")
    assert p.returncode == 0
    assert p.stderr == ""
    q = tzrun("--nproc-per-node=2", "--master-port", str(free_port()), "--no-python", "/bin/true")
    assert "OMP_NUM_THREADS" in q.stderr  # the banner is shown at the default level


def test_port_busy_names_the_port_and_the_fix():
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", 0))
        s.listen()
        port = s.getsockname()[1]
        p = tzrun("--master-port", str(port), "--no-python", "/bin/true")
    assert p.returncode == 125, p.stderr
    assert f"port {port} is already in use" in p.stderr
    assert "--master-port" in p.stderr and "--standalone" in p.stderr
    assert "--port" not in p.stderr.replace("--master-port", "")


def test_redirect_only_output_says_where_the_logs_are():
    p = tzrun("-r", "3", "--master-port", str(free_port()), "--no-python", "/bin/echo", "hi")
    assert p.returncode == 0
    assert "worker logs are written under" in p.stderr
    logdir = p.stderr.split("worker logs are written under ")[1].split()[0]
    with open(os.path.join(logdir, "attempt_0", "0", "stdout.log")) as f:
        assert f.read() == "hi\n"


def test_sigchld_cannot_be_forwarded():
    p = tzrun("--signals-to-handle", "SIGTERM,SIGCHLD", "--no-python", "/bin/true")
    assert p.returncode == 2
    assert "cannot be forwarded" in p.stderr


def test_dry_run_uses_an_explicit_static_endpoint():
    p = tzrun("--dry-run", "--rdzv-endpoint", "node0:1234", "--no-python", "/bin/true")
    assert p.returncode == 0, p.stderr
    assert "  MASTER_ADDR=node0\n" in p.stdout and "  MASTER_PORT=1234\n" in p.stdout
    q = tzrun("--dry-run", "--rdzv-endpoint", "node0", "--no-python", "/bin/true")
    assert q.returncode == 2 and "has no port" in q.stderr


def test_dry_run_under_etcd_names_etcd_and_its_default_endpoint():
    # Found by a new-user trial: the dry run said "c10d assigns node ranks", "store on <FQDN>"
    # and the platform line "rdzv=etcd@" for the etcd backends.
    for backend in ("etcd", "etcd-v2"):
        p = tzrun("--dry-run", "--nnodes=2", f"--rdzv-backend={backend}", "--rdzv-id=j",
                  "--no-python", "/bin/true")
        assert p.returncode == 0, p.stderr
        out = p.stdout
        assert f"rdzv_backend={backend} rdzv_endpoint=localhost:2379 rdzv_id=j" in out, out
        assert f"(the {backend} rendezvous assigns node ranks)" in out, out
        assert "store on <round rank 0's address>:<free port> (the rendezvous state is in etcd)" \
            in out, out
        assert "  MASTER_ADDR=<round rank 0's address>\n" in out, out
        assert "c10d" not in out, out
        assert f"rdzv={backend}@localhost:2379 " in p.stderr, p.stderr


def test_busy_default_port_falls_back_to_a_free_one_on_one_node():
    """Two single-node jobs without port flags: the second one's store moves to a free port
    (with a warning) instead of dying on torchrun's default 29500; an explicit port still fails
    (test_port_busy_names_the_port_and_the_fix)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", 29500))
            s.listen()
        except OSError:
            pass  # already taken by someone else: busy all the same
        p = tzrun("--nproc-per-node=1", "--no-python", "sh", "-c", 'echo "port=$MASTER_PORT"')
    assert p.returncode == 0, p.stderr
    assert "port 29500 is in use" in p.stderr and "free port" in p.stderr, p.stderr
    port = int(p.stdout.split("port=")[1].split()[0])
    assert port != 29500 and 0 < port < 65536
