"""Per-TFLite-operator placement: what Vela (the installed ``ethos-u-vela``) puts on the NPU versus byoc's
``ethos-u`` target. Vela's side is read from the file it writes: operators it runs on the NPU are folded into
``CUSTOM:ethos-u`` operators, every other operator stays in the file for the CPU. Operators are identified by
the names of the tensors they write (the importer's spans carry the same names); Vela's CPU operators are
paired with the model's by ``benchmarks.bench_npu.match_ops`` (Vela writes unnamed tensors as '<unnamed>').

``python tests/patterns/vela_placement.py MODEL...`` prints the comparison table.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

VELA_ARGS = ("--accelerator-config", "ethos-u55-256")


def vela_executable() -> str | None:
    here = Path(sys.executable).parent / "vela"
    return str(here) if here.exists() else shutil.which("vela")


@dataclass(frozen=True)
class Placement:
    model: str
    ops: tuple[str, ...]               # every operator's first output tensor name, in file order
    opcodes: tuple[str, ...]
    vela_cpu: frozenset[str]
    byoc_cpu: frozenset[str]
    byoc_reasons: dict                 # CPU operator → the report's reason

    @property
    def differences(self) -> list[tuple[str, str, str]]:
        """(operator, opcode, reason) of every operator placed differently."""
        code = dict(zip(self.ops, self.opcodes))
        return [(o, code[o], self.byoc_reasons.get(o, "on the NPU in byoc, on the CPU in Vela"))
                for o in self.ops if (o in self.vela_cpu) != (o in self.byoc_cpu)]


def _op_outputs(data: bytes) -> tuple[tuple[str, ...], tuple[str, ...]]:
    from byoc.frontend.tflite_reader import read_model
    m = read_model(data)
    names = [t.name or f"t{t.index}" for t in m.tensors]
    return tuple(names[o.outputs[0]] for o in m.operators), tuple(o.opcode for o in m.operators)


def vela_cpu_ops(model: Path, workdir: Path) -> frozenset[str]:
    """Output tensor names of the operators Vela leaves to the CPU (runs Vela)."""
    exe = vela_executable()
    if exe is None:
        raise RuntimeError("vela is not installed")
    subprocess.run([exe, *VELA_ARGS, "--output-dir", str(workdir), str(model)], check=True, capture_output=True,
                   timeout=600)
    from benchmarks.bench_npu import _op_sigs, match_ops
    out = workdir / f"{model.stem}_vela.tflite"
    # Vela renames unnamed tensors '<unnamed>': pair its CPU operators with the model's (match_ops), not by name
    cpu = [s for s in _op_sigs(out.read_bytes()) if s.opcode != "CUSTOM:ethos-u"]
    names, _ = _op_outputs(model.read_bytes())
    return frozenset(names[i] for i in match_ops(_op_sigs(model.read_bytes()), cpu).values())


def byoc_cpu_ops(model: Path) -> tuple[frozenset[str], dict]:
    """Output tensor names of the TFLite operators any of whose nodes byoc's ``ethos-u`` target leaves on the CPU
    (imported and partitioned as ``byoc partition --target ethos-u`` does: compute-free partitions kept, as Vela keeps them)."""
    from byoc.cli.cmd_model import give_back_policies
    from byoc.cli.common import load_model
    from byoc.partition import partition_for
    m = load_model(str(model), "auto", target="ethos-u")
    _, report = partition_for("ethos-u", m.mod, m.params, return_report=True, **give_back_policies("ethos-u"))
    cpu = {n.name: n.reason for n in report.cpu_ops() if n.name}
    return frozenset(cpu), cpu


def placement(model: Path, workdir: Path) -> Placement:
    ops, codes = _op_outputs(model.read_bytes())
    cpu, reasons = byoc_cpu_ops(model)
    return Placement(model.name, ops, codes, vela_cpu_ops(model, workdir), cpu & set(ops), reasons)


def main(paths: list[str]) -> None:
    import tempfile
    rows = []
    for p in paths:
        with tempfile.TemporaryDirectory() as d:
            pl = placement(Path(p), Path(d))
        n = len(pl.ops)
        diffs = "; ".join(f"{c} {o!r}: {r}" for o, c, r in pl.differences) or "none"
        rows.append(f"| {pl.model} | {n} | {n - len(pl.vela_cpu)} | {n - len(pl.byoc_cpu)} | {diffs} |")
    print("| model | TFLite ops | Vela NPU | byoc ethos-u NPU | differences |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main(sys.argv[1:])
