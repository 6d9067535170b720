"""The compiled artifact: ``module.export(path)`` writes one file, ``byoc.load(path)`` reads it back and runs.

The file is a ``runtime.container`` (magic, format version, SHA-256 of the JSON header and of every section;
sections tile the payload exactly). Its header ``meta``::

    format "byoc-artifact", format_version 1, producer
    target      ["npu", "llvm"]                          the build's target list
    options     {"npu_config": {...} | null, ...}        JSON-able build options (the NPU config in full)
    graph       {"section": "graph", "spans": "spans"}   IR text with metadata (byoc.text) + node names
    inputs      [{"name", "dtype", "shape"}]             main's inputs once params are bound
    outputs     [{"dtype", "shape"}]
    params      [{"name", "dtype", "shape", "section"}]  build's params (raw little-endian bytes)
    partitions  [{"symbol", "compiler", "section"|null}] each Compiler function; its runner's bytes (the NPU
                                                         program's binary encoding) when the codegen has a loader
    cpu         {"fingerprint", "kernels": [{"symbol", "section"}]}   object code of every CPU kernel

Loading parses JSON, UTF-8 text and fixed binary structures only; nothing is unpickled or evaluated. Every
field is checked (types, names, that each section is referenced exactly once, that array sizes add up, that
inputs/outputs and NPU programs match the graph) before anything large is allocated; any problem is an
``ArtifactError``. NPU programs are decoded and validated, not recompiled.

CPU kernels are regenerated from the graph (cheap; their object code comes from the kernel cache when this
machine compiled them before). The artifact's object code is native code: like a shared library it is only
linked when the caller trusts the file (``load(path, trust_native_code=True)``) and it was built for this CPU
and LLVM (same backend fingerprint); each object is then used only for the kernel whose content hash (its
symbol, recomputed here from the graph) it was built from.
"""
from __future__ import annotations

import json
import os
from typing import Any


from byoc.errors import ArtifactError, ByocError

from .arrays import decode_array, describe_array
from .container import ContainerFile, decode_container, encode_container, write_container

__all__ = ["FORMAT", "FORMAT_VERSION", "export", "export_bytes", "load", "load_bytes"]

FORMAT = "byoc-artifact"
FORMAT_VERSION = 1
_META_KEYS = ("format", "format_version", "producer", "target", "options", "graph", "inputs", "outputs", "params",
              "partitions", "cpu")
MAX_NAME = 1024


# ---------------------------------------------------------------------------------------------------- export

def export(module, path) -> None:
    """Write ``module`` (a ``GraphModule`` from ``byoc.build``) to ``path``."""
    meta, sections = _export_parts(module)
    try:
        write_container(path, meta, sections)   # section by section: the file is never assembled in memory
    except OSError as e:
        raise ArtifactError(f"cannot write artifact {os.fspath(path)!r}: {e.strerror or e}") from None


def export_bytes(module) -> bytes:
    return encode_container(*_export_parts(module))


def _export_parts(module) -> tuple[dict, dict[str, bytes]]:
    from byoc.backend.llvm import get_codegen
    from byoc.ir.types import TensorType, TupleType
    sections: dict[str, bytes] = {}
    sections["graph"] = module.source.astext(show_meta_data=True).encode("utf-8")
    sections["spans"] = json.dumps(_collect_spans(module.source), separators=(",", ":")).encode("utf-8")
    params = []
    for i, (name, value) in enumerate(sorted(module.params.items())):
        desc, blob = describe_array(value)
        params.append({"name": name, **desc, "section": f"param:{i}"})
        sections[f"param:{i}"] = blob
    partitions = []
    for step in module.executable.extern_steps:
        entry = {"symbol": step.name, "compiler": step.compiler, "section": None}
        if hasattr(step.run, "to_bytes"):
            entry["section"] = f"partition:{step.name}"
            sections[entry["section"]] = bytes(step.run.to_bytes())
        partitions.append(entry)
    kernels = []
    for symbol, obj in _object_code(module.library):
        kernels.append({"symbol": symbol, "section": f"object:{symbol}"})
        sections[f"object:{symbol}"] = obj
    main = module.main
    ret = main.body.checked_type
    rets = list(ret.fields) if isinstance(ret, TupleType) else [ret]
    meta = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "producer": _producer(),
        "target": list(module.target), "options": _json_options(module),
        "graph": {"section": "graph", "spans": "spans"},
        "inputs": [{"name": p.name_hint, "dtype": str(p.checked_type.dtype),
                    "shape": [int(d) for d in p.checked_type.shape]} for p in main.params],
        "outputs": [{"dtype": str(t.dtype), "shape": [int(d) for d in t.shape]} for t in rets
                    if isinstance(t, TensorType)],
        "params": params, "partitions": partitions,
        "cpu": {"fingerprint": get_codegen().fingerprint, "kernels": kernels},
    }
    return meta, sections


def _producer() -> str:
    import byoc
    return f"byoc {byoc.__version__}"


def _json_options(module) -> dict:
    out: dict[str, Any] = {}
    for k, v in sorted(module.options.items()):
        if k == "npu_config":
            continue
        if v is None or isinstance(v, (str, int, float, bool)):
            out[k] = v
    cfg = module.npu_config
    if cfg is None and "npu" in module.target and "npu_config" in module.options:
        from .npu_codegen import resolve_npu_config
        cfg = resolve_npu_config(module.options["npu_config"])
    if cfg is not None:
        from npu_sim.program import _config_to_dict
        out["npu_config"] = _config_to_dict(cfg)
    return out


def _object_code(library) -> list[tuple[str, bytes]]:
    """(symbol, object code) of every kernel: from the kernel cache, compiled again where it has none."""
    from byoc.backend.llvm import codegen as cgmod
    cg = library.codegen
    directory = cgmod.cache_dir()
    out = []
    for symbol, text in sorted(library.ir_texts.items()):
        placeholder = text.replace(f'@"{symbol}"', f'@"{cgmod.KERNEL_PLACEHOLDER}"')
        sym, key = cg.symbol_for(placeholder)
        obj = cgmod._read_cached(directory, key) if directory is not None and sym == symbol else None  # noqa: SLF001
        out.append((symbol, obj if obj is not None else cg.compile_object(text, symbol)))
    return out


def _collect_spans(mod) -> dict:
    """What the text format drops, by post-order position: node names (``Span.source``) and variable names the
    printer had to sanitise (``%input.5`` prints as ``%input_5``)."""
    from byoc.ir.expr import Var
    from byoc.ir.traversal import post_order
    funcs = []
    for gv, func in mod.sorted_items():
        nodes = post_order(func)
        spans = [[i, type(n).__name__, n.span.source] for i, n in enumerate(nodes)
                 if getattr(n, "span", None) is not None and n.span.source]
        names = [[i, n.name_hint] for i, n in enumerate(nodes) if isinstance(n, Var)]
        funcs.append({"name": gv.name_hint, "count": len(nodes), "spans": spans, "vars": names})
    return {"functions": funcs}


# ------------------------------------------------------------------------------------------------------ load

def load(path, *, trust_native_code: bool = False, num_threads: int = 1):
    """Read an artifact written by ``module.export`` and return a runnable ``GraphModule``."""
    try:
        src = os.fspath(path)
    except TypeError:
        raise ArtifactError(f"byoc.load takes a file path, got {type(path).__name__}") from None
    # Sections are read one at a time as loading needs them (every checksum is verified on opening), so the
    # file's bytes are never all in memory at once.
    with ContainerFile(src) as sections:
        return _load_checked(sections.meta, sections, src, trust_native_code, num_threads)


def load_bytes(data: bytes, source: str = "<bytes>", *, trust_native_code: bool = False, num_threads: int = 1):
    meta, sections = decode_container(data, source, copy=False)   # views of ``data``, not a second copy
    return _load_checked(meta, sections, source, trust_native_code, num_threads)


def _load_checked(meta: dict, sections, source: str, trust_native_code: bool, num_threads: int):
    try:
        return _load(meta, sections, source, trust_native_code, num_threads)
    except ByocError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, RecursionError, UnicodeError) as e:
        # Last line of defence: whatever slipped past the checks is still a refused file, not a traceback.
        raise ArtifactError(f"{source}: artifact is inconsistent ({type(e).__name__}: {e})",
                            hint="the file is corrupt; recompile the model") from e


class _Check:
    """Collects every problem in the header, so one error lists them all."""

    def __init__(self, source: str):
        self.source = source
        self.problems: list[str] = []

    def need(self, ok: bool, msg: str) -> bool:
        if not ok:
            self.problems.append(msg)
        return ok

    def raise_if_any(self, what: str) -> None:
        if self.problems:
            shown = self.problems[:20]
            more = [f"  ... and {len(self.problems) - 20} more"] if len(self.problems) > 20 else []
            raise ArtifactError(f"{self.source}: {what}: {len(self.problems)} problem(s)",
                                notes=tuple("  - " + p for p in shown) + tuple(more),
                                hint="the artifact is corrupt or was written by another tool; recompile the model")


def _is_name(v) -> bool:
    return isinstance(v, str) and 0 < len(v) <= MAX_NAME


def _is_shape(v) -> bool:
    return isinstance(v, list) and len(v) <= 8 and all(isinstance(d, int) and not isinstance(d, bool)
                                                        and 0 <= d < (1 << 40) for d in v)


def _check_meta(meta: dict, sections: dict[str, bytes], source: str) -> None:
    c = _Check(source)
    if meta.get("format") != FORMAT:
        raise ArtifactError(f"{source}: not a byoc compiled artifact (format {meta.get('format')!r}, expected "
                            f"{FORMAT!r})", hint="compile the model with byoc.build(...).export(path)")
    if meta.get("format_version") != FORMAT_VERSION:
        raise ArtifactError(f"{source}: artifact format version {meta.get('format_version')!r}, this byoc reads "
                            f"version {FORMAT_VERSION}", hint="recompile the model with this version of byoc")
    unknown = sorted(k for k in meta if k not in _META_KEYS)
    c.need(not unknown, f"unknown header field(s) {unknown}")
    c.need(all(k in meta for k in _META_KEYS), f"missing header field(s) {[k for k in _META_KEYS if k not in meta]}")
    c.raise_if_any("malformed header")
    used: list[str] = []

    def section(ref, what: str) -> None:
        if c.need(isinstance(ref, str) and ref in sections, f"{what}: section {ref!r} does not exist"):
            used.append(ref)

    c.need(isinstance(meta["producer"], str), "producer is not a string")
    target = meta["target"]
    c.need(isinstance(target, list) and 0 < len(target) <= 16 and all(_is_name(t) for t in target),
           f"target {target!r} is not a list of names")
    c.need(isinstance(meta["options"], dict), "options is not an object")
    graph = meta["graph"]
    if c.need(isinstance(graph, dict) and sorted(graph) == ["section", "spans"], "graph entry is malformed"):
        section(graph["section"], "graph")
        section(graph["spans"], "graph spans")
    for key in ("inputs", "outputs"):
        items = meta[key]
        if not c.need(isinstance(items, list) and len(items) <= 100_000, f"{key} is not a list"):
            continue
        for i, t in enumerate(items):
            want = ["dtype", "name", "shape"] if key == "inputs" else ["dtype", "shape"]
            c.need(isinstance(t, dict) and sorted(t) == want and isinstance(t["dtype"], str) and _is_shape(t["shape"])
                   and (key == "outputs" or _is_name(t["name"])), f"{key}[{i}] is malformed")
    params = meta["params"]
    if c.need(isinstance(params, list) and len(params) <= 1_000_000, "params is not a list"):
        for i, p in enumerate(params):
            if c.need(isinstance(p, dict) and sorted(p) == ["dtype", "name", "section", "shape"] and _is_name(p["name"]),
                      f"params[{i}] is malformed"):
                section(p["section"], f"param {p['name']!r}")
        names = [p.get("name") for p in params if isinstance(p, dict)]
        c.need(len(set(map(str, names))) == len(names), "parameter names repeat")
    parts = meta["partitions"]
    if c.need(isinstance(parts, list) and len(parts) <= 1_000_000, "partitions is not a list"):
        for i, p in enumerate(parts):
            if c.need(isinstance(p, dict) and sorted(p) == ["compiler", "section", "symbol"] and _is_name(p["symbol"])
                      and _is_name(p["compiler"]), f"partitions[{i}] is malformed") and p["section"] is not None:
                section(p["section"], f"partition {p['symbol']!r}")
    cpu = meta["cpu"]
    if c.need(isinstance(cpu, dict) and sorted(cpu) == ["fingerprint", "kernels"] and isinstance(cpu["fingerprint"], str)
              and isinstance(cpu["kernels"], list), "cpu entry is malformed"):
        for i, k in enumerate(cpu["kernels"]):
            if c.need(isinstance(k, dict) and sorted(k) == ["section", "symbol"] and _is_name(k["symbol"]),
                      f"cpu kernel {i} is malformed"):
                section(k["section"], f"kernel {k['symbol']!r}")
    c.need(len(set(used)) == len(used), "a section is referenced twice")
    unused = sorted(set(sections) - set(used))
    c.need(not unused, f"section(s) {unused[:5]} are not referenced by the header")
    c.raise_if_any("inconsistent header")


def _load(meta: dict, sections, source: str, trust_native_code: bool, num_threads: int):
    """``sections`` maps names to bytes (or read-only views); it may read each one only when asked."""
    from byoc.backend.llvm import get_codegen
    from byoc.build import HOST_TARGETS, get_codegen_entry
    from byoc.text.parser import parse
    from .module import build_module

    _check_meta(meta, sections, source)
    c = _Check(source)
    # Array descriptors first: every size must add up before anything else is decoded.
    params = {}
    for p in meta["params"]:
        params[p["name"]] = decode_array({"dtype": p["dtype"], "shape": p["shape"]}, sections[p["section"]],
                                         f"{source}: param {p['name']!r}")
    try:
        text = str(sections[meta["graph"]["section"]], "utf-8")
    except UnicodeDecodeError as e:
        raise ArtifactError(f"{source}: graph section is not UTF-8 (byte {e.start})") from None
    try:
        mod = parse(text)
    except ByocError as e:
        raise ArtifactError(f"{source}: graph section does not parse: {e.message}",
                            hint="the artifact is corrupt; recompile the model") from None
    del text  # the constants now live in the module; the text (base64 of every weight) is no longer needed
    mod = _apply_spans(mod, sections[meta["graph"]["spans"]], source)
    main = mod["main"] if "main" in mod else None
    if main is None:
        raise ArtifactError(f"{source}: the graph has no main function")
    declared = {p.name_hint: p for p in main.params}
    for name, arr in params.items():
        p = declared.get(name)
        t = getattr(p, "type_annotation", None) if p is not None else None
        if c.need(p is not None, f"param {name!r} is not a parameter of main") and t is not None:
            c.need(tuple(int(d) for d in t.shape) == arr.shape and str(t.dtype) == arr.dtype.name,
                   f"param {name!r}: {arr.dtype.name}{list(arr.shape)} does not match main's "
                   f"{t.dtype}{[int(d) for d in t.shape]}")
    c.raise_if_any("parameters do not fit the graph")

    # Targets and partitions must be exactly the graph's.
    target = list(meta["target"])
    missing = [t for t in target if t not in HOST_TARGETS and get_codegen_entry(t) is None]
    if missing:
        raise ArtifactError(f"{source}: artifact needs codegen(s) {', '.join(missing)}, not registered here",
                            hint="load the file that registers them (byoc ... --patterns FILE.py), install the "
                                 "package whose byoc.targets entry point provides them, or import it first")
    if not any(t in HOST_TARGETS for t in target):
        raise ArtifactError(f"{source}: target {target} has no host target")
    graph_parts = _graph_partitions(mod)
    declared_parts = {p["symbol"]: p for p in meta["partitions"]}
    c.need(len(declared_parts) == len(meta["partitions"]), "a partition symbol repeats")
    c.need(sorted(graph_parts) == sorted(declared_parts),
           f"partitions {sorted(declared_parts)[:5]} ≠ the graph's {sorted(graph_parts)[:5]}")
    for sym, f in graph_parts.items():
        p = declared_parts.get(sym)
        if p is not None:
            c.need(str(f.attrs["Compiler"]) == p["compiler"], f"partition {sym}: compiler {p['compiler']!r} ≠ "
                                                              f"the graph's {f.attrs['Compiler']!r}")
            c.need(p["compiler"] in target, f"partition {sym}: compiler {p['compiler']!r} is not in the target")
    c.raise_if_any("partitions do not fit the graph")

    options = {k: v for k, v in meta["options"].items() if k != "npu_config"}
    if meta["options"].get("npu_config") is not None:
        from npu_sim.config import config_from_dict
        if not isinstance(meta["options"]["npu_config"], dict):
            raise ArtifactError(f"{source}: options.npu_config is not an object")
        try:
            options["npu_config"] = config_from_dict(meta["options"]["npu_config"], source=f"{source}: npu_config")
            options["npu_config"].validate()
        except ByocError as e:
            raise ArtifactError(f"{source}: the recorded NPU config is invalid: {e.message}", notes=e.notes) from None

    # Partitions: decoded from their stored bytes by the codegen's loader, or compiled again.
    externs = {}
    for name in target:
        if name in HOST_TARGETS:
            continue
        entry = get_codegen_entry(name)
        stored = {p["symbol"]: p["section"] for p in meta["partitions"]
                  if p["compiler"] == name and p["section"] is not None}
        if stored and entry.loader is None:
            raise ArtifactError(f"{source}: partitions for {name!r} were stored, but that codegen has no loader")
        externs[name] = _extern_from_artifact(entry, stored, sections, options)

    objects = None
    fingerprint = get_codegen().fingerprint
    if trust_native_code and meta["cpu"]["fingerprint"] == fingerprint:
        objects = {k["symbol"]: bytes(sections[k["section"]]) for k in meta["cpu"]["kernels"]}
    module = build_module(mod, target, params, externs, options, num_threads=num_threads, objects=objects)
    _check_signature(module, meta, source)
    module.artifact_meta = meta
    return module


def _graph_partitions(mod) -> dict:
    """Symbol → partition function: global ones, and the literals ``Inline`` left in main (``relay.build``'s
    pipeline inlines partitions as TVM's did), which the executor names by their ``global_symbol``."""
    from byoc.ir.expr import Function
    from byoc.ir.traversal import post_order
    parts = {gv.name_hint: f for gv, f in mod.sorted_items() if "Compiler" in f.attrs}
    for node in post_order(mod["main"].body):
        if isinstance(node, Function) and "Compiler" in node.attrs:
            parts.setdefault(str(node.attrs.get("global_symbol", "fn")), node)
    return parts


def _extern_from_artifact(entry, stored: dict[str, str], sections, options: dict):
    """``stored``: partition symbol → its section, read only when that partition is built (one at a time)."""
    compile_fn = entry.compile_with(options)

    def codegen(func, symbol):  # func: the typed partition from the executor's module
        if symbol in stored:
            return entry.loader(func, symbol, bytes(sections[stored[symbol]]), options)  # (a file section is bytes already)
        return compile_fn(func, symbol)
    return codegen


def _check_signature(module, meta: dict, source: str) -> None:
    from byoc.ir.types import TensorType, TupleType
    main = module.main
    got_in = [{"name": p.name_hint, "dtype": str(p.checked_type.dtype),
               "shape": [int(d) for d in p.checked_type.shape]} for p in main.params]
    ret = main.body.checked_type
    rets = list(ret.fields) if isinstance(ret, TupleType) else [ret]
    got_out = [{"dtype": str(t.dtype), "shape": [int(d) for d in t.shape]} for t in rets if isinstance(t, TensorType)]
    c = _Check(source)
    c.need(got_in == meta["inputs"], f"inputs {meta['inputs']} ≠ the graph's {got_in}")
    c.need(got_out == meta["outputs"], f"outputs {meta['outputs']} ≠ the graph's {got_out}")
    c.raise_if_any("the graph's signature does not match the header")


def _apply_spans(mod, blob: bytes, source: str):
    """Give the parsed nodes back their names; the table must describe exactly this graph."""
    from byoc.ir.expr import Span, Var
    from byoc.ir.traversal import post_order, rewrite_post_order
    try:
        doc = json.loads(str(blob, "utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise ArtifactError(f"{source}: spans section is not JSON: {e}") from None
    funcs = doc.get("functions") if isinstance(doc, dict) else None
    items = list(mod.sorted_items())
    if not isinstance(funcs, list) or len(funcs) != len(items):
        raise ArtifactError(f"{source}: spans section does not describe the graph's {len(items)} function(s)")
    out = mod.copy()
    for (gv, func), entry in zip(items, funcs):
        where = f"{source}: spans of @{gv.name_hint}"
        if not (isinstance(entry, dict) and entry.get("name") == gv.name_hint and isinstance(entry.get("spans"), list)
                and isinstance(entry.get("vars"), list)):
            raise ArtifactError(f"{where} are malformed")
        nodes = post_order(func)
        if entry.get("count") != len(nodes):
            raise ArtifactError(f"{where} describe {entry.get('count')!r} nodes, the graph has {len(nodes)}")

        def node_at(e, n_fields: int):
            if not (isinstance(e, list) and len(e) == n_fields and isinstance(e[0], int) and not isinstance(e[0], bool)
                    and 0 <= e[0] < len(nodes) and isinstance(e[-1], str) and 0 < len(e[-1]) <= MAX_NAME):
                raise ArtifactError(f"{where}: entry {str(e)[:80]} does not fit the graph")
            return nodes[e[0]]
        spans: dict[int, str] = {}
        for e in entry["spans"]:
            n = node_at(e, 3)
            if e[1] != type(n).__name__ or not hasattr(n, "span"):
                raise ArtifactError(f"{where}: entry {str(e)[:80]} names a {type(n).__name__}")
            spans[id(n)] = e[2]
        names: dict[int, str] = {}
        for e in entry["vars"]:
            n = node_at(e, 2)
            if not isinstance(n, Var):
                raise ArtifactError(f"{where}: variable entry {str(e)[:80]} names a {type(n).__name__}")
            names[id(n)] = e[1]
        if not spans and not names:
            continue

        def restore(orig, new, spans=spans, names=names):
            changes = {}
            if id(orig) in spans:
                changes["span"] = Span(spans[id(orig)])
            if id(orig) in names and names[id(orig)] != new.name_hint:
                changes["name_hint"] = names[id(orig)]
            return new.replace(**changes) if changes else None
        out[gv.name_hint] = rewrite_post_order(func, restore, preserves_types=True)  # names and spans only
    return out
