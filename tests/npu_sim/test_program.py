"""Program binaries: round trip, disassembly, and corrupted or inconsistent binaries failing with NPUError."""
from __future__ import annotations

import dataclasses
import struct
import zlib

import numpy as np
import pytest

import npu_sim
from byoc.errors import ByocError, NPUError
from npu_sim.isa import Engine, Load, Mac
from npu_sim.program import MAGIC, Program

from npu_builders import conv_composite, partition, requant_scales


@pytest.fixture(scope="module")
def case():
    rng = np.random.default_rng(3)
    w = rng.integers(-128, 128, size=(12, 3, 3, 6)).astype(np.int8)
    p, body = conv_composite((1, 10, 9, 6), w, padding=(1, 1, 1, 1), zp_in=-7, s_w=requant_scales(rng, 12),
                             bias=rng.integers(-900, 900, 12), clip=(-90, 100))
    fn = partition([p], body)
    x = rng.integers(-128, 128, size=(1, 10, 9, 6)).astype(np.int8)
    cfg = npu_sim.preset("vta-default")
    # A small input buffer forces several tiles, so the program has tokens on every edge.
    cfg = cfg.replace(local_buffers=(dataclasses.replace(cfg.local_buffers[0], size_bytes=1024),)
                      + cfg.local_buffers[1:])
    prog = npu_sim.compile(fn, cfg)
    return prog, {"p0": x}


def _with_crc(body: bytes) -> bytes:
    return body + struct.pack("<I", zlib.crc32(body))


def test_round_trip_preserves_program_and_results(case):
    prog, inputs = case
    assert len(prog.commands) > 12
    data = prog.to_bytes()
    back = Program.from_bytes(data)
    assert back.disassemble() == prog.disassemble()
    assert back.to_bytes() == data
    (a,), sa = npu_sim.simulate(prog, inputs)
    (b,), sb = npu_sim.simulate(back, inputs)
    assert np.array_equal(a, b) and sa.total_cycles == sb.total_cycles


def test_disassembly_names_engines_tokens_and_operands(case):
    text = case[0].disassemble()
    assert "MAC   wait=dma_in" in text and "k=3x3" in text and "pad=-7" in text
    assert "REQUANT".lower() in text and "rounding=TFLITE" in text


@pytest.mark.parametrize("cut", [0, 5, 20, 100, -5, -1])
def test_truncated_binaries_are_rejected(case, cut):
    data = case[0].to_bytes()
    with pytest.raises(NPUError, match="truncated|does not match its header"):
        Program.from_bytes(data[:cut])


def test_header_and_checksum_errors(case):
    data = bytearray(case[0].to_bytes())
    with pytest.raises(NPUError, match="not an NPU program"):
        Program.from_bytes(b"XXXXXXXX" + bytes(data[8:]))
    bad_version = bytes(data[:8]) + struct.pack("<H", 99) + bytes(data[10:])
    with pytest.raises(NPUError, match="version 99 is not supported"):
        Program.from_bytes(bad_version)
    flipped = bytearray(data)
    flipped[len(flipped) // 2] ^= 0x40
    with pytest.raises(NPUError, match="checksum mismatch"):
        Program.from_bytes(bytes(flipped))


def _rebuild(prog: Program, commands) -> bytes:
    return dataclasses.replace(prog, commands=tuple(commands)).to_bytes()


def test_dropped_token_is_caught_by_the_validator(case):
    prog, _ = case
    cmds = list(prog.commands)
    i = next(k for k, c in enumerate(cmds) if isinstance(c, Mac) and c.wait & (1 << Engine.DMA_IN))
    cmds[i] = dataclasses.replace(cmds[i], wait=cmds[i].wait & ~(1 << Engine.DMA_IN))
    with pytest.raises(NPUError, match="do not balance"):
        Program.from_bytes(_rebuild(prog, cmds))


def test_missing_dependency_is_a_hazard_even_when_tokens_balance(case):
    prog, _ = case
    cmds = list(prog.commands)
    # Remove one dma_in→mac token pair: the MAC may now read its IFM tile before the load lands.
    i = next(k for k, c in enumerate(cmds) if isinstance(c, Mac) and c.wait & 1)
    j = max(k for k in range(i) if isinstance(cmds[k], Load) and cmds[k].signal & (1 << Engine.MAC))
    cmds[i] = dataclasses.replace(cmds[i], wait=cmds[i].wait & ~1)
    cmds[j] = dataclasses.replace(cmds[j], signal=cmds[j].signal & ~(1 << Engine.MAC))
    with pytest.raises(NPUError, match="hazard"):
        Program.from_bytes(_rebuild(prog, cmds))


def test_out_of_range_operands_are_named(case):
    prog, _ = case
    cmds = list(prog.commands)
    i = next(k for k, c in enumerate(cmds) if isinstance(c, Load))
    cmds[i] = dataclasses.replace(cmds[i], off=10_000_000)
    with pytest.raises(NPUError, match=r"#%d load: bytes .* outside buffer" % i):
        Program.from_bytes(_rebuild(prog, cmds))
    cmds = list(prog.commands)
    cmds[i] = dataclasses.replace(cmds[i], base=cmds[i].base + 5_000_000)
    with pytest.raises(NPUError, match="is not one region"):
        Program.from_bytes(_rebuild(prog, cmds))


def test_deadlock_is_reported_with_the_stuck_commands(case):
    prog, _ = case
    cmds = list(prog.commands)
    # A load that waits for the MAC before the MAC's first token-producing command can run.
    cmds[0] = dataclasses.replace(cmds[0], wait=cmds[0].wait | (1 << Engine.MAC))
    k = next(k for k, c in enumerate(cmds) if isinstance(c, Mac))
    cmds[k] = dataclasses.replace(cmds[k], signal=cmds[k].signal | 1)
    with pytest.raises(NPUError, match="deadlock|hazard|balance"):
        Program.from_bytes(_rebuild(prog, cmds))


# numpy warnings are errors here: a corrupt program must never make the simulator compute on garbage (a tile of
# the wrong shape once sent as_strided out of bounds: "invalid value encountered in cast")
@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_random_corruptions_never_escape_as_raw_exceptions(case):
    """Any byte flipped (checksum fixed up so decoding gets past it) gives NPUError or a valid program."""
    prog, inputs = case
    data = prog.to_bytes()
    body = data[:-4]
    rng = np.random.default_rng(11)
    accepted = 0
    for _ in range(300):
        b = bytearray(body)
        for _ in range(int(rng.integers(1, 4))):
            pos = int(rng.integers(len(MAGIC) + 2, len(b)))
            b[pos] = int(rng.integers(0, 256))
        try:
            p2 = Program.from_bytes(_with_crc(bytes(b)))
        except NPUError:
            continue
        accepted += 1
        try:
            npu_sim.simulate(p2, inputs)
        except ByocError:
            pass
    assert accepted < 300


@pytest.mark.parametrize("target", ["npu", "ethos-u"])
@pytest.mark.parametrize("preset", ["ethos-u55-256-like", "vta-default", "ethos-u55-32", "ethos-n78-like"])
def test_compiled_programs_pass_the_full_validator(target, preset):
    # compile checks only its memory map and bindings (its commands are correct by construction); the full
    # validator (every command's fields and buffers, tokens, deadlock, hazards) must agree on real models
    import pathlib
    from byoc.cli.common import load_model
    from byoc.partition import partition_for
    from runtime.npu_codegen import SimulatorCodegen, simulator_codegen_for
    tiny = pathlib.Path(__file__).resolve().parents[1] / "data" / "mlcommons_tiny"
    codegen = simulator_codegen_for(target) or SimulatorCodegen(target)
    n = 0
    for model in ("kws_ref_model.tflite", "str_ww_ref_model.tflite", "pretrainedResnet_quant.tflite"):
        m = load_model(str(tiny / model), "auto", None, target)
        for gv, f in partition_for(target, m.mod, m.params).sorted_items():
            if f.attrs.get("Compiler") == target:
                prog = codegen.program(f, gv.name_hint, preset)
                assert prog.validate(check_hazards=True, check_deadlock=True) is prog
                n += 1
    assert n >= 3


def test_continued_constant_loads_are_checked(case):
    """LOAD_CONTINUE (a piece of a constant tile) is for 1-D constant loads only, and needs the tile it extends."""
    from npu_sim.isa import LOAD_CONTINUE, TileKind
    prog, inputs = case
    cmds = list(prog.commands)
    i = next(k for k, c in enumerate(cmds) if isinstance(c, Load) and c.kind == TileKind.IFM)
    cmds[i] = dataclasses.replace(cmds[i], pad=cmds[i].pad | LOAD_CONTINUE)
    with pytest.raises(NPUError, match=r"#%d: only a 1-D constant load continues a tile" % i):
        Program.from_bytes(_rebuild(prog, cmds))
    cmds = list(prog.commands)
    j = next(k for k, c in enumerate(cmds) if isinstance(c, Load) and c.kind == TileKind.WEIGHT)
    cmds[j] = dataclasses.replace(cmds[j], pad=LOAD_CONTINUE)
    bad = Program.from_bytes(_rebuild(prog, cmds))
    assert "cont" in npu_sim.isa.disassemble_command(bad.commands[j])
    with pytest.raises(NPUError, match="continues a constant tile, but none ends"):
        npu_sim.simulate(bad, inputs)
