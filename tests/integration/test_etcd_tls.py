"""TLS to etcd for both etcd rendezvous backends: a real etcd (Debian's etcd-server) serving
https with client-certificate authentication, certificates made here by the openssl command
line, and tzrun agents given torchrun's --rdzv-conf keys (etcd-v2: protocol, ssl_cert,
ssl_cert_key, ca_cert; legacy etcd: protocol, cert, key, cacert).

- two agents (one with a separate key file, one with a PEM that holds both, as python-etcd's
  "combined certificate") form a world and all_reduce;
- a server certificate from another CA, a missing client certificate and plain http to the
  https etcd fail at once (exit 125, long before join_timeout) with a message naming the cause;
- a real torchrun agent (python-etcd over https) and a tzrun agent share one etcd-v2 rendezvous.
"""
import os
import shutil
import ssl
import subprocess
import time
import urllib.request

import pytest

from conftest import free_port
from test_etcd_rendezvous import ETCD, INFRA_EXIT, _has_python_etcd, etcd_args
from test_rendezvous_local import ALLREDUCE, agents, logs, run_beside_torchrun  # noqa: F401

OPENSSL = shutil.which("openssl")


def _openssl(*args, cwd):
    subprocess.run([OPENSSL, *args], cwd=cwd, check=True, capture_output=True)


def _ca(d, name):
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
             "-keyout", f"{name}.key", "-out", f"{name}.pem", cwd=d)


def _signed(d, ca, name, ext):
    (d / f"{name}.ext").write_text(ext)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout",
             f"{name}.key", "-out", f"{name}.csr", cwd=d)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem",
             cwd=d)


@pytest.fixture
def pki(tmp_path):
    """A CA, etcd's server certificate (127.0.0.1 / localhost), a client certificate (key apart
    and combined in one PEM), and a second CA that signed nothing of this etcd."""
    if OPENSSL is None:
        pytest.skip("no openssl command (Debian package openssl)")
    d = tmp_path / "pki"
    d.mkdir()
    _ca(d, "ca")
    _ca(d, "other_ca")
    _signed(d, "ca", "server", "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
            "extendedKeyUsage=serverAuth\n")
    _signed(d, "ca", "client", "extendedKeyUsage=clientAuth\n")
    (d / "client_combined.pem").write_text((d / "client.pem").read_text() +
                                           (d / "client.key").read_text())
    return d


@pytest.fixture
def tls_etcd(tmp_path, pki):
    """etcd serving its v2 API over https only, requiring a client certificate of `pki`'s CA."""
    if not os.access(ETCD, os.X_OK):
        pytest.skip("no etcd binary (apt-get install etcd-server, or TZRUN_ETCD)")
    port, peer = free_port(), free_port()
    client, peer_url = f"https://127.0.0.1:{port}", f"http://127.0.0.1:{peer}"
    log = open(tmp_path / "etcd.log", "w")
    proc = subprocess.Popen(
        [ETCD, "--name=t", f"--data-dir={tmp_path / 'etcd-data'}", "--enable-v2=true",
         f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
         f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
         f"--initial-cluster=t={peer_url}", f"--cert-file={pki / 'server.pem'}",
         f"--key-file={pki / 'server.key'}", "--client-cert-auth=true",
         f"--trusted-ca-file={pki / 'ca.pem'}"], stdout=log, stderr=subprocess.STDOUT)
    ctx = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    ctx.load_cert_chain(str(pki / "client.pem"), str(pki / "client.key"))
    end = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{client}/v2/keys/", timeout=1, context=ctx).read()
            break
        except OSError:
            if time.monotonic() > end or proc.poll() is not None:
                proc.kill()
                pytest.fail("etcd did not start:\n" + (tmp_path / "etcd.log").read_text())
            time.sleep(0.1)
    yield f"127.0.0.1:{port}"
    proc.kill()
    proc.wait()
    log.close()


def tls_conf(backend, pki, *, combined=False, ca="ca.pem", client=True, protocol="https"):
    """--rdzv-conf with the backend's own key names (see the module doc)."""
    if backend == "etcd":
        keys, base = ("cert", "key", "cacert"), "timeout=120,last_call_timeout=1,read_timeout=10"
    else:
        keys = ("ssl_cert", "ssl_cert_key", "ca_cert")
        base = "join_timeout=60,last_call_timeout=1,keep_alive_interval=1,read_timeout=10"
    conf = f"{base},protocol={protocol},{keys[2]}={pki / ca}"
    if client and combined:
        conf += f",{keys[0]}={pki / 'client_combined.pem'}"
    elif client:
        conf += f",{keys[0]}={pki / 'client.pem'},{keys[1]}={pki / 'client.key'}"
    return conf


@pytest.mark.parametrize("backend", ["etcd-v2", "etcd"])
def test_two_agents_rendezvous_over_tls(tmp_path, agents, pki, tls_etcd, backend):
    a = agents(etcd_args(tls_etcd, "127.0.0.2", tmp_path, ALLREDUCE, backend=backend,
                         conf=tls_conf(backend, pki)), tmp_path / "a.log")
    time.sleep(0.5)  # the legacy backend ranks by join order: a first
    b = agents(etcd_args(tls_etcd, "127.0.0.3", tmp_path, ALLREDUCE, backend=backend,
                         conf=tls_conf(backend, pki, combined=True)), tmp_path / "b.log")
    assert a.wait(180) == 0, logs(a, b)
    assert b.wait(60) == 0, logs(a, b)
    for rank in range(2):
        value, world = (tmp_path / f"sum{rank}.txt").read_text().split()
        assert float(value) == 3.0 and int(world) == 2


@pytest.mark.parametrize("backend", ["etcd-v2", "etcd"])
@pytest.mark.parametrize("case,needle", [
    ("other_ca", "TLS with etcd failed"),
    ("no_client_cert", "TLS with etcd failed"),
    ("http", "serves https: add --rdzv-conf protocol=https"),
])
def test_tls_misconfiguration_fails_at_once_naming_it(tmp_path, agents, pki, tls_etcd, backend,
                                                      case, needle):
    conf = tls_conf(backend, pki, ca="other_ca.pem" if case == "other_ca" else "ca.pem",
                    client=case != "no_client_cert")
    if case == "http":
        conf = conf.split(",protocol=")[0] + ",protocol=http"
    t0 = time.monotonic()
    a = agents(etcd_args(tls_etcd, "127.0.0.2", tmp_path, ALLREDUCE, backend=backend, conf=conf),
               tmp_path / "a.log")
    assert a.wait(60) == INFRA_EXIT, logs(a)
    assert time.monotonic() - t0 < 30, logs(a)  # join_timeout / timeout are 60 / 120 s
    assert f"etcd {tls_etcd}" in a.text() or f"etcd at {tls_etcd}" in a.text(), logs(a)
    assert needle in a.text(), logs(a)


@pytest.mark.needs_python_etcd
def test_torchrun_and_tzrun_agents_share_a_tls_rendezvous(tmp_path, agents, pki, tls_etcd):
    if not _has_python_etcd():
        pytest.skip("torchrun's etcd backends need python-etcd (pip install python-etcd)")
    conf = tls_conf("etcd-v2", pki)
    args = lambda addr: etcd_args(tls_etcd, addr, tmp_path, ALLREDUCE,  # noqa: E731
                                  run_id="mixed-tls", conf=conf)
    run_beside_torchrun(tmp_path, agents, args, "127.0.0.2", "127.0.0.3", torchrun_first=False)
