"""Module names say what they hold (docs/architecture.md, "Where a new op goes")."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("byoc", "patterns", "npu_sim", "runtime", "explore")
VAGUE = re.compile(r"(_more\d*|_misc|_extra\d*|_new|\d)\.py$")


def test_no_module_is_named_by_order_of_arrival():
    vague = [str(p.relative_to(ROOT)) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py") if VAGUE.search(p.name)]
    assert not vague, f"rename these after the family they hold: {vague}"


def test_every_op_family_module_is_named_in_the_architecture_guide():
    guide = (ROOT / "docs" / "architecture.md").read_text()
    section = guide.split("## Where a new op goes", 1)[1].split("\n## ", 1)[0]
    homes = [p for p in (ROOT / "byoc" / "frontend").glob("tflite_ops_*.py")]
    homes += [p for p in (ROOT / "byoc" / "backend" / "llvm").glob("lower_*.py")]
    missing = [p.name for p in homes if f"`{p.name}`" not in section]
    assert not missing, f"docs/architecture.md does not say what these hold: {missing}"
