"""The project's exception hierarchy.

Every error a user can provoke is a ``ByocError``. Messages are diagnostics: they name the node, op, file
offset or pass involved, say what was expected and what was found, and where possible give a hint.
"""
from __future__ import annotations

__all__ = [
    "ByocError", "IRError", "TypeInferenceError", "ParseError", "PassError", "PatternError",
    "PartitionError", "ModelError", "CodegenError", "NPUError", "ConfigError", "ArtifactError",
    "ExecutionError", "UnsupportedOpsError", "UnsupportedAPIError", "PluginError",
]


class ByocError(Exception):
    """Base class of every error the project raises on bad input."""

    def __init__(self, message: str, *, hint: str | None = None, notes: tuple[str, ...] = ()):
        self.message = message
        self.hint = hint
        self.notes = tuple(notes)
        super().__init__(self._render())

    def _render(self) -> str:
        parts = [self.message]
        parts.extend(self.notes)
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)

    def with_note(self, note: str) -> "ByocError":
        """Attach context (e.g. a marked IR excerpt) and return self for re-raising."""
        self.notes = self.notes + (note,)
        self.args = (self._render(),)
        return self


class IRError(ByocError):
    """Malformed IR: wrong arity, unknown op or attribute, bad node construction."""


class TypeInferenceError(IRError):
    """A type relation failed: names the op and argument, expected vs found."""


class ParseError(ByocError):
    """Malformed text format; carries line and column."""

    def __init__(self, message: str, line: int = 0, column: int = 0, *, hint: str | None = None,
                 notes: tuple[str, ...] = ()):
        self.line = line
        self.column = column
        super().__init__(f"{line}:{column}: {message}" if line else message, hint=hint, notes=notes)


class PassError(ByocError):
    """A pass failed; the message names the pass and the passes that ran before it."""


class PatternError(ByocError):
    """Bad pattern construction or a rewrite that did not reach a fixed point."""


class PatternCheckError(PatternError):
    """A pattern table's check (or a ``target.<name>`` predicate) raised: names the entry and the op; the
    original exception is ``cause`` (and ``__cause__``)."""

    def __init__(self, message: str, *, entry: str = "", op: str = "", cause: BaseException | None = None,
                 hint: str | None = None, notes: tuple[str, ...] = ()):
        self.entry = entry
        self.op = op
        self.cause = cause
        super().__init__(message, hint=hint, notes=notes)


__all__.append("PatternCheckError")


class PartitionError(ByocError):
    """Partitioning produced or was given an invalid graph."""


class ModelError(ByocError):
    """A model file (TFLite/ONNX) is corrupt, inconsistent or unsupported."""


class UnsupportedOpsError(ModelError):
    """A model uses ops the importer does not support; lists all of them at once."""


class CodegenError(ByocError):
    """A backend could not generate code for a function."""


class NPUError(ByocError):
    """The NPU compiler or simulator rejected a program."""


class ConfigError(NPUError):
    """An impossible or malformed NPU configuration."""


class ArtifactError(ByocError):
    """A compiled artifact is corrupt, truncated, foreign or version-incompatible."""


class ExecutionError(ByocError):
    """Running a module failed because of its inputs (missing input, wrong shape or dtype)."""


class NoKernelError(ExecutionError):
    """Executing a model reached an op no executor has a kernel for (a TFLite CUSTOM operator imported as an
    opaque ``tflite.custom`` op, byoc/ops/custom.py): names the op, the TFLite operator index and its file offset."""

    def __init__(self, message: str, *, op_name: str = "", operator_index: int = -1, file_offset: int = -1,
                 hint: str | None = None, notes: tuple[str, ...] = ()):
        self.op_name = op_name
        self.operator_index = operator_index
        self.file_offset = file_offset
        super().__init__(message, hint=hint, notes=notes)


__all__.append("NoKernelError")


class UnsupportedAPIError(ByocError):
    """A TVM API this project deliberately does not provide (C source codegen, DNNL/TensorRT, the Prelude)."""

    def __init__(self, api: str, why: str, *, hint: str | None = None):
        self.api = api
        super().__init__(f"{api} is not provided by byoc: {why}",
                         hint=hint or "see docs/porting-from-tvm.md for what to use instead")


class PluginError(ByocError):
    """A user's target file (``--patterns FILE.py``) or a ``byoc.targets`` entry point could not be loaded."""
