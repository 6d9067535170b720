"""Where points run: in this process, in a local process pool (the default), or as tasks on a Ray cluster.

Each runner yields finished point rows as they complete (any order); the caller stores them. Models are shipped
once per worker: the pool's initializer receives them, and on Ray they are put in the object store once and every
task takes the reference (``evaluate.prepared`` then partitions each model once per worker process).
"""
from __future__ import annotations

import os
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from byoc.errors import ByocError

from .tasks import init_worker, run_in_worker, run_point

__all__ = ["run_tasks", "ClusterError"]


class ClusterError(ByocError):
    pass


def run_tasks(specs: dict, tasks: list, workers: int | None = None, cluster: str | None = None):
    if not tasks:
        return
    if cluster:
        yield from _ray(specs, tasks, cluster)
        return
    n = (os.cpu_count() or 1) if workers is None else workers
    n = max(1, min(n, len(tasks)))
    if n == 1:
        for t in tasks:
            yield run_point(specs[t[2]], t)
        return
    yield from _pool(specs, tasks, n)


def _pool(specs, tasks, n):
    """A spawn-context pool with at most 2n points in flight; a worker that dies takes only its own points with
    it (recorded as errors), and a fresh pool continues with the rest."""
    import multiprocessing as mp
    queue = list(reversed(tasks))
    while queue:
        ex = ProcessPoolExecutor(n, mp_context=mp.get_context("spawn"), initializer=init_worker,
                                 initargs=(specs,))
        inflight = {}
        broken = False
        try:
            while queue or inflight:
                while queue and len(inflight) < 2 * n and not broken:
                    t = queue.pop()
                    inflight[ex.submit(run_in_worker, t)] = t
                if not inflight:
                    break
                finished, _ = wait(inflight, return_when=FIRST_COMPLETED)
                for f in finished:
                    t = inflight.pop(f)
                    try:
                        yield f.result()
                    except BrokenProcessPool:
                        broken = True
                        yield _died(specs[t[2]], t)
                if broken:
                    for f, t in list(inflight.items()):  # their worker may or may not have been the one
                        queue.append(t)
                    break
        finally:
            ex.shutdown(wait=True, cancel_futures=True)


def _died(spec, t) -> dict:
    import json
    coords = json.loads(t[3])
    return {"point_id": t[1], "seq": t[0], "model": spec.name, "model_sha": spec.sha, "target": spec.target,
            "config_name": str(coords.get("preset", t[4])), "coords": t[3], "config": "", "status": "error",
            "error": "WorkerDied: the worker process evaluating this point died", "metrics": {}, "_layers": []}


def _ray_module():
    try:
        import ray
    except ImportError:
        raise ClusterError("--cluster needs Ray, which is not installed",
                           hint="pip install 'byoc[cluster]' (or pip install ray), or drop --cluster to use the "
                                "local process pool") from None
    return ray


def _ray(specs, tasks, address: str):
    ray = _ray_module()
    started = False
    if not ray.is_initialized():
        try:
            if address == "local":   # a throwaway single-machine cluster started here, on loopback only
                from .ray_loopback import start_loopback_ray
                start_loopback_ray()
            elif address.startswith("ray://"):
                ray.init(address=address)
            else:                    # "auto" or HOST:PORT of a running head
                ray.init(address=address, log_to_driver=False)
        except Exception as e:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError, ... for a bad address
            raise ClusterError(f"cannot connect to the Ray cluster {address!r}: {e}",
                               hint="start one with `ray start --head`, or use --cluster auto / ray://HOST:10001")
        started = True
    try:
        refs = {k: ray.put(s) for k, s in specs.items()}   # each model once in the object store
        remote = ray.remote(max_retries=3, num_cpus=1)(_ray_point)
        pending = {remote.remote(refs[t[2]], t): t for t in tasks}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for r in ready:
                t = pending.pop(r)
                try:
                    yield ray.get(r)
                except Exception as e:  # noqa: BLE001 - the task failed after its retries (worker lost)
                    row = _died(specs[t[2]], t)
                    row["error"] = f"RayTaskError: {type(e).__name__}"
                    yield row
    finally:
        if started:
            ray.shutdown()


def _ray_point(spec, task):
    return run_point(spec, task)
