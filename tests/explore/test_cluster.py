"""The Ray path: a real single-machine Ray cluster on the loopback address, 2 worker CPUs, a worker killed
mid-sweep; the stored rows equal the local process pool's."""
from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import tempfile

import pytest

from explore import sweep
from explore.store import Store

from .conftest import KWS, space


def _is_loopback(ip: str) -> bool:
    a = ipaddress.ip_address(ip)
    return (getattr(a, "ipv4_mapped", None) or a).is_loopback   # ::ffff:127.0.0.1 is loopback too


def _listening_addresses(pids) -> set[str]:
    import psutil
    return {c.laddr.ip for c in psutil.net_connections("inet")
            if c.pid in pids and c.status == psutil.CONN_LISTEN}


@pytest.fixture(scope="module")
def loopback_cluster():
    """A real single-machine Ray cluster (GCS, raylet, object store, 2 worker CPUs) started here on 127.0.0.1."""
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'byoc[cluster]' (the sweep's "
                                            "--cluster path is then tested)")
    from explore.ray_loopback import start_loopback_ray
    temp = tempfile.mkdtemp(prefix="ray")   # short: Ray's socket paths must fit AF_UNIX's 107 bytes
    try:
        ctx = start_loopback_ray(num_cpus=2, temp_dir=temp)
        yield ctx
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def test_ray_sweep_with_a_killed_worker_equals_the_local_pool(reference_sweep, loopback_cluster, tmp_path):
    import psutil
    ctx = loopback_cluster
    killed, listening = [], set()

    def kill_one_worker(row):
        if not killed and row.get("_pid") and row["_pid"] != os.getpid():
            cluster = {p.pid for p in psutil.Process().children(recursive=True)}
            listening.update(_listening_addresses(cluster))
            os.kill(row["_pid"], signal.SIGKILL)   # a worker process of the cluster this test started
            killed.append(row["_pid"])
    address = ctx.address_info["address"]
    assert address.startswith("127.0.0.1:") and ctx.address_info["node_ip_address"] == "127.0.0.1"
    db = tmp_path / "ray.sqlite"
    res = sweep([KWS], space(), db, cluster=address, measure_cpu_time=False, progress=False,
                on_point=kill_one_worker)
    assert killed
    # every server of the cluster listens on loopback only (no host address, no wildcard)
    assert listening and all(_is_loopback(ip) for ip in listening), listening
    assert (res.total, res.computed, res.errors) == (12, 12, 0)
    ref_db, _ = reference_sweep
    with Store(db) as a, Store(ref_db) as b:
        assert a.rows() == b.rows() and a.layer_rows() == b.layer_rows()


def test_tuning_on_the_ray_cluster_writes_the_in_process_records(loopback_cluster, tmp_path):
    from explore.tune import tune
    here, there = tmp_path / "here.jsonl", tmp_path / "ray.jsonl"
    kw = dict(target="ethos-u", npu_config="ethos-u55-256", trials=3)
    tune(KWS, output=here, workers=1, **kw)
    tune(KWS, output=there, cluster=loopback_cluster.address_info["address"], **kw)
    assert there.read_text() == here.read_text() and here.read_text()
