"""``tvm.runtime``: load and run built modules in TVM's spelling, over the project's ``runtime`` package.

``load_module(path)`` reads what ``export_library`` wrote (one byoc artifact, ``runtime/artifact.py``) and
returns the same factory module ``relay.build`` does (``lib["default"](dev)``); ``save_param_dict`` /
``load_param_dict`` store parameters in the checksummed container format (never pickle). ``vm`` holds TVM's
VM interface (``Executable``, ``VirtualMachine``), ``container`` the ``ADT`` a VM returns for a tuple.
"""
from ..nd import NDArray, Device, cpu, device
from .. import nd as ndarray
from .factory import GraphExecutorFactoryModule, Module, load_module
from .params import load_param_dict, save_param_dict

__all__ = ["NDArray", "Device", "cpu", "device", "ndarray", "Module", "GraphExecutorFactoryModule", "load_module",
           "save_param_dict", "load_param_dict", "Object"]


class Object:
    """Base of TVM's registered object classes (``@register_object``): a plain Python class here."""

    def __init_handle_by_constructor__(self, constructor, *args):
        constructor(*args)  # TVM's C++ constructors are not part of byoc; get_global_func names the missing one


def __getattr__(name):
    import importlib
    if name in ("vm", "container"):  # tvm.runtime.vm.VirtualMachine, tvm.runtime.container.ADT
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'byoc.runtime' has no attribute {name!r}")
