"""Where points run: in this process, in a local process pool (the default), or as tasks on a Ray cluster.

Each runner yields finished point rows as they complete (any order); the caller stores them. Models are shipped
once per worker: the pool's initializer receives them, and on Ray they are put in the object store once and every
task takes the reference (``evaluate.prepared`` then partitions each model once per worker process).
``map_jobs`` runs any list of jobs on the same executors (``byoc tune``'s trials).
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from byoc.errors import ByocError

from .tasks import init_worker, run_in_worker, run_point

__all__ = ["run_tasks", "map_jobs", "ClusterError"]


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


@contextmanager
def _ray_session(address: str):
    """Connected to the Ray cluster at ``address`` for the block (a connection made here is closed after it)."""
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
        yield ray
    finally:
        if started:
            ray.shutdown()


def _ray(specs, tasks, address: str):
    with _ray_session(address) as ray:
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


def _ray_point(spec, task):
    return run_point(spec, task)


# ------------------------------------------------------------------------------------------------- any jobs
_SHARED: list = []


def _init_shared(fn, shared) -> None:
    _SHARED[:] = [fn, shared]


def _call_shared(job):
    fn, shared = _SHARED
    return fn(shared, job)


def _ray_job(fn, shared, job):
    return fn(shared, job)


def map_jobs(fn, shared, jobs: list, workers: int | None = None, cluster: str | None = None, attempts: int = 3):
    """``(index, fn(shared, job))`` for every job, in completion order, on the sweeps' executors: this process
    (``workers`` 0/1), a local spawn pool (the default: one process per CPU), or Ray tasks (``cluster``).
    ``shared`` reaches each worker once (pool initializer, Ray object store). ``fn`` must be a module-level
    function. A job whose worker died is run again (at most ``attempts`` times, then ClusterError)."""
    if not jobs:
        return
    if cluster:
        with _ray_session(cluster) as ray:
            ref = ray.put(shared)
            remote = ray.remote(max_retries=attempts, num_cpus=1)(_ray_job)
            pending = {remote.remote(fn, ref, job): i for i, job in enumerate(jobs)}
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for r in ready:
                    i = pending.pop(r)
                    try:
                        out = ray.get(r)
                    except ray.exceptions.RayTaskError as e:   # fn raised: the job's own error, as it was raised
                        raise e.as_instanceof_cause() from None
                    except Exception as e:  # noqa: BLE001 - the worker was lost after its retries
                        raise ClusterError(f"job {i} failed on the Ray cluster: {type(e).__name__}: {e}") from None
                    yield i, out
        return
    n = (os.cpu_count() or 1) if workers is None else workers
    n = max(1, min(n, len(jobs)))
    if n == 1:
        for i, job in enumerate(jobs):
            yield i, fn(shared, job)
        return
    import multiprocessing as mp
    queue = list(reversed(range(len(jobs))))
    tries = dict.fromkeys(range(len(jobs)), 0)
    while queue:
        ex = ProcessPoolExecutor(n, mp_context=mp.get_context("spawn"), initializer=_init_shared,
                                 initargs=(fn, shared))
        inflight: dict = {}
        try:
            broken = False
            while (queue or inflight) and not broken:
                while queue and len(inflight) < 2 * n:
                    i = queue.pop()
                    tries[i] += 1
                    inflight[ex.submit(_call_shared, jobs[i])] = i
                finished, _ = wait(inflight, return_when=FIRST_COMPLETED)
                for f in finished:
                    i = inflight.pop(f)
                    try:
                        out = f.result()
                    except BrokenProcessPool:
                        broken = True
                        queue.append(i)
                        continue
                    yield i, out
            if broken:
                queue.extend(inflight.values())
                inflight.clear()
                lost = [i for i in queue if tries[i] >= attempts]
                if lost:
                    raise ClusterError(f"job {lost[0]} lost its worker process {attempts} times")
        finally:
            ex.shutdown(wait=True, cancel_futures=True)
