"""Global functions TVM implemented in C++ that its Python pattern tables call while partitioning.

A ported table reaches them through ``tvm._ffi._init_api(namespace, __name__)`` or ``get_global_func``; without
them an unchanged table fails inside its checks (CMSIS-NN's conv2d check calls ``GetEffectiveConv2DPadding``).
They are registered on first use of the global function table, under TVM's names.

* ``relay.ext.cmsisnn.transform.GetEffectiveConv2DPadding(conv2d, pad)``: the conv's own padding plus the H and
  W padding of the ``nn.pad`` before it, as (top, left, bottom, right) ``IntImm`` values.
* ``relay.ext.cmsisnn.transform.{GenerateCMSISNNConstants, CMSISNNFusePads, ScalarToTensorConstants,
  ExtractConstantsFromPartitionedFunction}``: passes that reshape CMSIS-NN partitions for TVM's CMSIS-NN C code
  generator, which byoc does not have. A partition here runs through the codegen registered for its compiler,
  which takes the composite as partitioned, so they return the module unchanged (its values are the same).
"""
from __future__ import annotations

__all__ = ["register_tvm_builtins"]

_CMSISNN = "relay.ext.cmsisnn.transform."
_CMSISNN_CODEGEN_PASSES = ("GenerateCMSISNNConstants", "CMSISNNFusePads", "ScalarToTensorConstants",
                           "ExtractConstantsFromPartitionedFunction")


def effective_conv2d_padding(conv2d, pad):
    from ..tir import IntImm
    layout = str(conv2d.attrs.data_layout)
    h, w = layout.index("H"), layout.index("W")
    pw = pad.attrs.pad_width
    top, left, bottom, right = (int(p) for p in conv2d.attrs.padding)
    return [IntImm("int32", v) for v in (top + int(pw[h][0]), left + int(pw[w][0]),
                                         bottom + int(pw[h][1]), right + int(pw[w][1]))]


def _unchanged_module_pass(name: str):
    def make():
        from ..transform import module_pass

        @module_pass(opt_level=0, name=name)
        def unchanged(mod, ctx):
            return mod
        return unchanged
    return make


def register_tvm_builtins(funcs: dict) -> None:
    """Add the builtins to ``funcs`` (the global table) unless a user registered the same name first."""
    funcs.setdefault(_CMSISNN + "GetEffectiveConv2DPadding", effective_conv2d_padding)
    for name in _CMSISNN_CODEGEN_PASSES:
        funcs.setdefault(_CMSISNN + name, _unchanged_module_pass(name))
