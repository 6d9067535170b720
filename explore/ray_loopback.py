"""A throwaway single-machine Ray cluster that lives on the loopback address only.

Ray (measured with 2.60 on Linux) turns a ``127.0.0.1`` node address into the host's routable address
(``services.resolve_ip_for_localhost`` asks ``get_node_ip_address``, which looks outward unless Ray's
"clusters disabled" switch is set) and then binds the dashboard agent and runtime-env agent to that address, so a
"local" cluster talked to itself over the host interface. Ray's own switch for platforms without cluster support,
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, makes ``get_node_ip_address`` answer the loopback address; with it and
``_node_ip_address="127.0.0.1"`` every address Ray advertises (GCS, raylet, workers, agents) is loopback and all
its traffic stays on ``lo``.
"""
from __future__ import annotations

import os

__all__ = ["LOOPBACK", "loopback_only", "start_loopback_ray"]

LOOPBACK = "127.0.0.1"
_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def loopback_only() -> None:
    """Make this process and the Ray processes it starts use the loopback address as the node address."""
    os.environ[_SWITCH] = "0"   # read by the GCS, raylet and worker processes started from here
    try:
        from ray._private import ray_constants
    except ImportError:
        return
    ray_constants.ENABLE_RAY_CLUSTER = False   # read at call time by services.get_node_ip_address


def start_loopback_ray(num_cpus: int | None = None, temp_dir: str | None = None):
    """``ray.init`` of a new single-node cluster on 127.0.0.1 (no dashboard, worker logs not forwarded).
    ``temp_dir`` must be short: Ray's socket paths under it must fit AF_UNIX's 107 bytes. Returns Ray's context;
    its ``address_info["address"]`` is ``127.0.0.1:PORT``."""
    loopback_only()
    import ray
    kw = {"num_cpus": num_cpus} if num_cpus else {}
    if temp_dir:
        kw["_temp_dir"] = temp_dir
    return ray.init(address="local", include_dashboard=False, log_to_driver=False, _node_ip_address=LOOPBACK, **kw)
