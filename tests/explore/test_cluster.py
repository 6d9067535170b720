"""The Ray path: a real local Ray cluster, 2 worker CPUs, a worker killed mid-sweep.

Opt-in (``BYOC_RAY_TESTS=1``): Ray binds its cluster to the host's node address rather than loopback (it rewrites
127.0.0.1 to it, measured with Ray 2.60), and tests here send traffic to loopback only."""
from __future__ import annotations

import os
import shutil
import signal
import tempfile

import pytest

from explore import sweep
from explore.store import Store

from .conftest import KWS, space


@pytest.mark.skipif(os.environ.get("BYOC_RAY_TESTS") != "1",
                    reason="opt-in: BYOC_RAY_TESTS=1 (Ray's local cluster listens on the host address, not loopback)")
def test_ray_sweep_with_a_killed_worker_equals_the_local_pool(reference_sweep, tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'byoc[cluster]' (the sweep's "
                                            "--cluster path is then tested)")
    # A real single-machine Ray cluster (GCS, raylet, object store) with 2 worker CPUs, started here. Ray binds
    # it to the host's node address: it canonicalises a 127.0.0.1 head address to that address, and a head
    # started with --node-ip-address=127.0.0.1 then cannot be joined (measured with Ray 2.x here).
    temp = tempfile.mkdtemp(prefix="ray")   # short: Ray's socket paths must fit AF_UNIX's 107 bytes
    ctx = ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp)
    killed = []

    def kill_one_worker(row):
        if not killed and row.get("_pid") and row["_pid"] != os.getpid():
            os.kill(row["_pid"], signal.SIGKILL)   # a worker process of the cluster this test started
            killed.append(row["_pid"])
    try:
        db = tmp_path / "ray.sqlite"
        res = sweep([KWS], space(), db, cluster=ctx.address_info["address"], measure_cpu_time=False,
                    progress=False, on_point=kill_one_worker)
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
    assert killed
    assert (res.total, res.computed, res.errors) == (12, 12, 0)
    ref_db, _ = reference_sweep
    with Store(db) as a, Store(ref_db) as b:
        assert a.rows() == b.rows() and a.layer_rows() == b.layer_rows()
