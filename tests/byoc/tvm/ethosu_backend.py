"""What TVM's Ethos-U table imports from TVM's Ethos-U backend (``relay.backend.contrib.ethosu``), which byoc
does not have: ``codegen.replicate_pads``, ``preprocess.preprocess_ext_io`` and ``_ffi_api``. Written for these
tests from the passes' documented purpose (not TVM's code)."""
from __future__ import annotations

import types

from byoc._ffi import _init_api
from byoc.ir.expr import Call, Op
from byoc.ir.traversal import post_order, rewrite_post_order
from byoc.transform import module_pass

_ffi_api = types.ModuleType("ethosu_backend._ffi_api")
__import__("sys").modules[_ffi_api.__name__] = _ffi_api
_init_api("relay.ext.ethos-u", _ffi_api.__name__)


def _is_pad(e) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == "nn.pad"


def replicate_pads(mod):
    """Give every consumer of a shared ``nn.pad`` its own copy, so each convolution or pool can take its pad
    into its own composite (a shared pad matches at most one of them)."""
    main = mod["main"]
    uses: dict[int, int] = {}
    for n in post_order(main.body):
        for a in (n.args if isinstance(n, Call) else ()):
            uses[id(a)] = uses.get(id(a), 0) + 1

    def fn(orig, new):
        if not isinstance(orig, Call):
            return None
        args = list(new.args)
        changed = False
        for i, a in enumerate(orig.args):
            if _is_pad(a) and uses.get(id(a), 0) > 1:
                p = args[i]
                args[i] = Call(p.op, p.args, p.attrs, p.span)
                changed = True
        return new.replace(args=tuple(args)) if changed else None

    body = rewrite_post_order(main.body, fn)
    if body is main.body:
        return mod
    out = mod.copy()
    out["main"] = main.replace(body=body)
    return out


@module_pass(opt_level=0, name="preprocess_ext_io")
def _preprocess_ext_io(mod, ctx):
    return mod


class codegen:  # noqa: N801 - stands for TVM's module of that name
    replicate_pads = staticmethod(replicate_pads)


class preprocess:  # noqa: N801
    @staticmethod
    def preprocess_ext_io():
        return _preprocess_ext_io
