"""``tvm.contrib``: ``graph_executor``, ``utils`` (``tempdir``) and ``relay_viz``. Other TVM contrib modules (cuDNN, TensorRT, MXNet helpers, ...)
raise ``UnsupportedAPIError``."""


def __getattr__(name):
    import importlib
    if name in ("graph_executor", "graph_runtime"):
        return importlib.import_module(f"{__name__}.graph_executor")
    if name == "utils":
        return importlib.import_module(f"{__name__}.utils")
    if name == "relay_viz":
        return importlib.import_module(f"{__name__}.relay_viz")
    if name.startswith("__"):
        raise AttributeError(name)
    from ..errors import UnsupportedAPIError
    raise UnsupportedAPIError(f"tvm.contrib.{name}", "only tvm.contrib.graph_executor, utils and relay_viz are provided")
