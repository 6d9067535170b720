"""NPU configurations: presets, TOML files, and impossible configs reported all at once."""
from __future__ import annotations

import dataclasses
import pathlib

import pytest

import npu_sim
from byoc.errors import ConfigError
from npu_sim.config import LocalBuffer, MemoryArea, config_from_dict


def test_presets_have_the_documented_peak_rates():
    # npu-model.md §5.3: U55-256 and VTA 256 MAC/cycle, N78 1 TOPS 512; depthwise 32 / 16 / 64. Ethos-U family:
    # Arm's published MACs per cycle (32..256 for U55, 256/512 for U65); depthwise one MAC per OFM ublock lane.
    rates = {n: (c.mac.macs_per_cycle, c.mac.dw_macs_per_cycle) for n, c in npu_sim.PRESETS.items()}
    assert rates == {"ethos-u55-256-like": (256, 32), "vta-default": (256, 16), "ethos-n78-like": (512, 64),
                     "ethos-u55-32": (32, 4), "ethos-u55-64": (64, 8), "ethos-u55-128": (128, 16),
                     "ethos-u55-256": (256, 32), "ethos-u65-256": (256, 32), "ethos-u65-512": (512, 64),
                     "ethos-u65-256-shared": (256, 32), "ethos-u65-512-shared": (512, 64)}
    # Vela's default system configs: U65 (Ethos_U65_Client_Server) runs at 1 GHz on 16 B/cycle AXI ports, DRAM
    # at clock scale 0.75 with 500 read-latency cycles.
    u65 = npu_sim.preset("ethos-u65-256")
    assert (u65.clock_hz, u65.area("sram").bytes_per_cycle, u65.area("dram").bytes_per_cycle) == (1e9, 16.0, 12.0)
    assert u65.area("dram").read_latency == 500
    u55 = npu_sim.preset("ethos-u55-256-like")
    assert (u55.area("sram").bytes_per_cycle, u55.area("flash").bytes_per_cycle) == (8.0, 1.0)
    assert (u55.area("sram").read_latency, u55.area("flash").read_latency) == (32, 64)
    assert u55.clock_hz == 500e6 and npu_sim.preset("vta-default").clock_hz == 100e6
    for c in npu_sim.PRESETS.values():
        assert c.validate() is c


def test_unknown_preset_suggests_a_close_name():
    with pytest.raises(ConfigError, match="did you mean 'vta-default'"):
        npu_sim.preset("vta-defualt")


def test_toml_with_base_overrides_only_given_fields(tmp_path):
    p = tmp_path / "npu.toml"
    p.write_text('base = "ethos-u55-256-like"\nname = "u55-fast-flash"\nclock_hz = 1e9\n'
                 '[mac]\nublock_c = 16\n[ppu.cycles_per_element]\nadd = 0.5\n'
                 '[[memory_area]]\nname = "sram"\nbytes_per_cycle = 16\nread_latency = 32\nwrite_latency = 32\n'
                 'burst_bytes = 32\n[[memory_area]]\nname = "flash"\nbytes_per_cycle = 4\nburst_bytes = 128\n')
    cfg = npu_sim.load_config(p)
    base = npu_sim.preset("ethos-u55-256-like")
    assert cfg.name == "u55-fast-flash" and cfg.clock_hz == 1e9
    assert cfg.mac.ublock_c == 16 and cfg.mac.ublock_h == base.mac.ublock_h
    assert cfg.ppu.cost("add") == 0.5 and cfg.ppu.cost("requant") == base.ppu.cost("requant")
    assert cfg.area("flash").bytes_per_cycle == 4 and cfg.local_buffers == base.local_buffers


def test_impossible_config_lists_every_problem(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('base = "vta-default"\n[mac]\nublock_c = 0\n'
                 '[[memory_area]]\nname = "dram"\nbytes_per_cycle = 0\n'
                 '[[local_buffer]]\nname = "tiny"\nsize_bytes = 64\nholds = ["ifm", "weight", "table", "acc", "ofm"]\n')
    with pytest.raises(ConfigError) as e:
        npu_sim.load_config(p)
    msg = str(e.value)
    assert "mac.ublock_c must be an integer >= 1" in msg
    assert "memory area 'dram': bytes_per_cycle must be positive" in msg


def test_sram_smaller_than_one_minimal_tile_is_rejected():
    cfg = npu_sim.preset("ethos-u55-256-like")
    bad = cfg.replace(local_buffers=(LocalBuffer("shram", 500, ("ifm", "acc", "ofm")),) + cfg.local_buffers[1:])
    with pytest.raises(ConfigError, match="smaller than two minimal tiles"):
        bad.validate()


def test_structural_mistakes_are_named():
    cfg = npu_sim.preset("vta-default")
    bad = dataclasses.replace(
        cfg, local_buffers=cfg.local_buffers[:-1],  # nobody holds 'ofm' tiles
        memory_areas=cfg.memory_areas + (MemoryArea("dram", 8.0),),
        placement=dataclasses.replace(cfg.placement, weights="flsh"))
    with pytest.raises(ConfigError) as e:
        bad.validate()
    msg = str(e.value)
    assert "exactly one local buffer must hold 'ofm' tiles" in msg
    assert "memory area 'dram' is defined 2 times" in msg
    assert "placement.weights = 'flsh' is not a memory area" in msg


def test_unknown_keys_and_bad_toml(tmp_path):
    with pytest.raises(ConfigError, match="unknown key mac.ublok_c.*did you mean 'ublock_c'"):
        config_from_dict({"base": "vta-default", "mac": {"ublok_c": 4}})
    with pytest.raises(ConfigError, match="missing 'mac'"):
        config_from_dict({"name": "x", "clock_hz": 1})
    p = tmp_path / "broken.toml"
    p.write_text("base = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        npu_sim.load_config(p)
    with pytest.raises(ConfigError, match="cannot read NPU config"):
        npu_sim.load_config(tmp_path / "missing.toml")


def test_weight_encoding_and_brick_depth_are_checked_in_toml():
    cfg = config_from_dict({"base": "ethos-u55-256", "weight_encoding": "raw", "fm_channel_quantum": 1})
    assert (cfg.weight_encoding, cfg.fm_channel_quantum) == ("raw", 1)
    with pytest.raises(ConfigError) as e:
        config_from_dict({"base": "ethos-u55-256", "weight_encoding": "zip", "fm_channel_quantum": 0})
    text = str(e.value) + "".join(e.value.notes if hasattr(e.value, "notes") else ())
    assert "fm_channel_quantum" in text
    with pytest.raises(ConfigError, match="weight_encoding"):
        config_from_dict({"base": "ethos-u55-256", "weight_encoding": "zip"})


def test_the_old_preset_name_is_the_ethos_u55_256_configuration():
    # ... but for the float32 output stage the generic ``npu`` target's preset has and Ethos-U has not
    old, new = npu_sim.preset("ethos-u55-256-like"), npu_sim.preset("ethos-u55-256")
    assert old.ppu.float_scale and not new.ppu.float_scale
    assert dataclasses.replace(old, name=new.name, ppu=dataclasses.replace(old.ppu, float_scale=False)) == new


def test_only_the_generic_presets_scale_in_float32():
    assert {n for n, c in npu_sim.PRESETS.items() if c.ppu.float_scale} == {"ethos-u55-256-like", "ethos-n78-like"}
    cfg = config_from_dict({"base": "ethos-u55-256", "ppu": {"float_scale": True}})
    assert cfg.ppu.float_scale


def test_zero_or_nan_bandwidth_and_bad_new_fields_name_the_field():
    """An Ethos-U preset with an impossible memory system or timing field: every field is named at once."""
    base = {"base": "ethos-u55-256",
            "memory_area": [{"name": "sram", "bytes_per_cycle": 0, "read_latency": 32, "burst_bytes": 32},
                            {"name": "flash", "bytes_per_cycle": float("nan"), "burst_bytes": 128}],
            "mac": {"pool_tap_cycles": 0, "step_delay": -1},
            "overheads": {"block_overlap": -4},
            "placement": {"io": "dram"}}
    with pytest.raises(ConfigError) as e:
        config_from_dict(base)
    text = str(e.value) + "\n".join(e.value.notes)
    for field in ("memory area 'sram': bytes_per_cycle must be positive, got 0",
                  "memory area 'flash': bytes_per_cycle must be positive, got nan",
                  "mac.pool_tap_cycles must be an integer >= 1, got 0",
                  "mac.step_delay must be an integer >= 0, got -1",
                  "overheads.block_overlap must be >= 0",
                  "placement.io = 'dram' is not a memory area"):
        assert field in text, field


def test_local_sram_smaller_than_a_block_names_the_buffer_size_field():
    cfg = npu_sim.preset("ethos-u55-256")
    bad = cfg.replace(local_buffers=(LocalBuffer("shram", 256, ("ifm", "acc", "ofm")),) + cfg.local_buffers[1:])
    with pytest.raises(ConfigError, match=r"local buffer 'shram': size_bytes \(256 B\) is smaller than two "
                                          r"minimal tiles"):
        bad.validate()


def test_cli_reports_an_impossible_config_file_as_bad_input(tmp_path, capsys):
    from byoc.cli import main
    model = pathlib.Path(__file__).resolve().parents[1] / "data" / "mlcommons_tiny" / "ad01_int8.tflite"
    toml = tmp_path / "slow.toml"
    toml.write_text('base = "ethos-u55-256"\n[[memory_area]]\nname = "sram"\nbytes_per_cycle = 0\n'
                    '[[memory_area]]\nname = "flash"\nbytes_per_cycle = 1\n')
    code = main(["compile", str(model), "--target", "ethos-u,llvm", "-o", str(tmp_path / "out.byoc"),
                 "--npu-config", str(toml)])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "bytes_per_cycle must be positive" in err
