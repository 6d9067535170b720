"""The LLVM layer, organised like numba's: a ``CpuCodegen`` owns the host target machine and the process-wide
JIT; a ``CodeLibrary`` collects kernel modules and ``finalize()`` verifies, optimises (O3, host CPU features),
emits object code and links it into the JIT once.

Kernel object code is cached twice: in-process by symbol (identical kernels compile once per process) and on
disk under ``$BYOC_CACHE_DIR`` (default ``~/.cache/byoc``), keyed by a hash of the kernel's IR text, the LLVM
version and the CPU name and features. The disk cache holds only object files this module wrote, each behind a
header with a SHA-256 of its payload; they are loaded through llvmlite's object-file API (never unpickled).
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm
from llvmlite import ir

from ...errors import CodegenError

__all__ = ["CpuCodegen", "CodeLibrary", "get_codegen", "cache_dir", "CodegenStats"]

# Bump when the generated code's meaning changes without its IR text changing (e.g. pass pipeline).
BACKEND_VERSION = "byoc-cpu-5"
_MAGIC = b"BYOCOBJ1"
KERNEL_PLACEHOLDER = "byoc_kernel"


def cache_dir() -> Path | None:
    """Where object code is cached; ``BYOC_CACHE_DIR=off`` disables the disk cache."""
    env = os.environ.get("BYOC_CACHE_DIR")
    if env is not None and env.strip().lower() in ("", "0", "off", "none"):
        return None
    return Path(env) if env else Path.home() / ".cache" / "byoc"


@dataclass
class CodegenStats:
    compiled: int = 0        # kernels compiled by LLVM in this process
    disk_hits: int = 0       # kernels loaded from the disk cache
    memory_hits: int = 0     # kernels already in this process's JIT


class CpuCodegen:
    """Owns the llvmlite target machine for the host CPU (its features, e.g. AVX-512 VNNI) and the JIT."""

    def __init__(self):
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        llvm.initialize_native_asmparser()
        self.triple = llvm.get_process_triple()
        self.cpu_name = llvm.get_host_cpu_name()
        feats = llvm.get_host_cpu_features()
        self.features = {k: bool(v) for k, v in sorted(feats.items())}
        self.feature_string = feats.flatten()
        target = llvm.Target.from_triple(self.triple)
        # The large code model: RuntimeDyld may place an object's code and constant pools more than 2 GiB
        # apart, and 32-bit PC-relative references then wrap silently (wrong constants, wrong results).
        self._target = target
        self.target_machine = self._new_target_machine()
        self._local = threading.local()
        self.data_layout = str(self.target_machine.target_data)
        self.vnni512 = self.has("avx512vnni") and self.has("avx512bw") and self.has("avx512f")
        self.avx512 = self.has("avx512f") and self.has("avx512bw")
        self.vector_bits = 512 if self.avx512 else (256 if self.has("avx2") else 128)
        self._engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self.target_machine)
        self._addresses: dict[str, int] = {}
        self._lock = threading.RLock()
        self.stats = CodegenStats()
        self.fingerprint = "|".join([BACKEND_VERSION, llvmlite.__version__, ".".join(map(str, llvm.llvm_version_info)),
                                     self.triple, self.cpu_name, self.feature_string])

    def _new_target_machine(self):
        return self._target.create_target_machine(
            cpu=self.cpu_name, features=self.feature_string, opt=3, reloc="static", codemodel="large")

    def _thread_state(self):
        """An LLVM context and target machine per compiling thread (neither is safe to share)."""
        st = self._local
        if not hasattr(st, "context"):
            st.context = llvm.create_context()
            st.target_machine = self._new_target_machine()
        return st.context, st.target_machine

    def has(self, feature: str) -> bool:
        return self.features.get(feature, False)

    def new_module(self, name: str) -> ir.Module:
        mod = ir.Module(name=name)
        mod.triple = self.triple
        mod.data_layout = self.data_layout
        return mod

    def finish_text(self, text: str) -> str:
        """Attach the function attributes llvmlite cannot spell (vector width preferences) to kernels."""
        head = f'define i32 @"{KERNEL_PLACEHOLDER}"('
        start = text.find(head)
        if start < 0:
            return text
        end = text.index("\n", start)
        line = text[start:end]
        if line.endswith(" nounwind"):
            line = line[: -len(" nounwind")]
        attrs = f'attributes #0 = {{ nounwind "prefer-vector-width"="{self.vector_bits}" ' \
                f'"min-legal-vector-width"="{self.vector_bits}" }}'
        return text[:start] + line + " #0" + text[end:] + "\n" + attrs + "\n"

    def create_library(self, name: str) -> "CodeLibrary":
        return CodeLibrary(self, name)

    def symbol_for(self, ir_text: str) -> tuple[str, str]:
        """(symbol, cache key) of a kernel whose IR text names its function ``byoc_kernel``."""
        key = hashlib.sha256((self.fingerprint + "\n" + ir_text).encode()).hexdigest()
        return "byoc_" + key[:32], key

    # -- compilation -------------------------------------------------------------------------------------

    def compile_object(self, ir_text: str, symbol: str) -> bytes:
        """Parse, verify, optimise at O3 for the host and emit an object file."""
        context, tm = self._thread_state()
        try:
            mod = llvm.parse_assembly(ir_text, context=context)
            mod.verify()
        except RuntimeError as e:
            raise CodegenError(f"generated LLVM IR for kernel {symbol} does not verify: {e}",
                               hint="this is a backend bug; the IR is attached", notes=(ir_text[:4000],)) from e
        mod.triple = self.triple
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pto.loop_unrolling = False  # full unrolling of small constant loops explodes compile time
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        mod.verify()
        return tm.emit_object(mod)

    def load_objects(self, objects: dict[str, bytes]) -> None:
        with self._lock:
            pending = [(s, o) for s, o in objects.items() if s not in self._addresses]
            for _, obj in pending:
                self._engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            if pending:
                self._engine.finalize_object()
            for sym, _ in pending:
                addr = self._engine.get_function_address(sym)
                if not addr:
                    raise CodegenError(f"kernel {sym} was compiled but its symbol is missing from the object code")
                self._addresses[sym] = addr

    def address(self, symbol: str) -> int | None:
        return self._addresses.get(symbol)

    def assembly(self, ir_text: str) -> str:
        """Optimised host assembly of one kernel (for inspection and tests)."""
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pb = llvm.create_pass_builder(self.target_machine, pto)
        pb.getModulePassManager().run(mod, pb)
        return self.target_machine.emit_assembly(mod)


class CodeLibrary:
    """Collects kernel IR modules; ``finalize()`` compiles what is not cached and links it, exactly once."""

    def __init__(self, codegen: CpuCodegen, name: str):
        self.codegen = codegen
        self.name = name
        self._kernels: dict[str, tuple[str, str]] = {}  # symbol -> (ir text with the symbol, cache key)
        self._finalized = False

    def add_kernel(self, module: ir.Module) -> str:
        """Add a module defining ``byoc_kernel``; returns the content-addressed symbol it is renamed to."""
        if self._finalized:
            raise CodegenError(f"code library {self.name}: operation impossible on a finalized library")
        text = self.codegen.finish_text(str(module))
        symbol, key = self.codegen.symbol_for(text)
        if symbol not in self._kernels:
            self._kernels[symbol] = (text.replace(f'@"{KERNEL_PLACEHOLDER}"', f'@"{symbol}"'), key)
        return symbol

    @property
    def ir_texts(self) -> dict[str, str]:
        return {s: t for s, (t, _) in self._kernels.items()}

    def finalize(self) -> None:
        if self._finalized:
            raise CodegenError(f"code library {self.name} is already finalized")
        cg = self.codegen
        objects: dict[str, bytes] = {}
        directory = cache_dir()
        misses = []
        for symbol, (text, key) in self._kernels.items():
            if cg.address(symbol) is not None:
                cg.stats.memory_hits += 1
                continue
            obj = _read_cached(directory, key) if directory is not None else None
            if obj is not None:
                cg.stats.disk_hits += 1
                objects[symbol] = obj
            else:
                misses.append((symbol, text, key))
        # LLVM releases the GIL: compile independent kernels on every core.
        workers = min(len(misses), os.cpu_count() or 1)
        if workers > 1:
            with ThreadPoolExecutor(workers) as pool:
                compiled = list(pool.map(lambda m: cg.compile_object(m[1], m[0]), misses))
        else:
            compiled = [cg.compile_object(text, symbol) for symbol, text, _ in misses]
        for (symbol, _, key), obj in zip(misses, compiled):
            cg.stats.compiled += 1
            if directory is not None:
                _write_cached(directory, key, obj)
            objects[symbol] = obj
        cg.load_objects({s: objects[s] for s in self._kernels if s in objects})
        self._finalized = True

    def get_address(self, symbol: str) -> int:
        if not self._finalized:
            raise CodegenError(f"code library {self.name} must be finalized before looking up {symbol}")
        addr = self.codegen.address(symbol)
        if addr is None:
            raise CodegenError(f"code library {self.name} has no kernel {symbol}")
        return addr


def _read_cached(directory: Path, key: str) -> bytes | None:
    path = directory / f"{key}.o"
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    head = len(_MAGIC) + 32
    if len(blob) <= head or blob[:len(_MAGIC)] != _MAGIC:
        return None
    payload = blob[head:]
    if hashlib.sha256(payload).digest() != blob[len(_MAGIC):head]:
        return None  # truncated or foreign: recompile and overwrite
    return payload


def _write_cached(directory: Path, key: str, obj: bytes) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".o")
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + hashlib.sha256(obj).digest() + obj)
        os.replace(tmp, directory / f"{key}.o")
    except OSError:
        pass  # a read-only or full cache directory only costs compile time


_CODEGEN: CpuCodegen | None = None
_CODEGEN_LOCK = threading.Lock()


def get_codegen() -> CpuCodegen:
    """The process's CPU codegen (one target machine and one JIT per process)."""
    global _CODEGEN
    with _CODEGEN_LOCK:
        if _CODEGEN is None:
            _CODEGEN = CpuCodegen()
        return _CODEGEN
