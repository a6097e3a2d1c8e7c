"""The one hardware-facts table: its loader, its inverses, and proof that every consumer reads it."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from accel.policies import hardware
from accel.policies.hardware import HardwareFactsError, load_facts
from accel.policies.plan import GpuPool

REPO = Path(__file__).resolve().parents[1]
CODE_DIRS = ("accel", "components", "policies")
TABLE_DIR = REPO / "policies" / "hardware"


def _machine_literal_pattern() -> re.Pattern[str]:
    """Every machine type of the table, and the TPU type / machine prefixes as they are used (v5p-128, ct5p-)."""
    facts = hardware.current()
    names = [*facts.gcp_gpu_machines, *facts.aws_gpu_instances, *facts.tpu_machines]
    prefixes = [g.machine_prefix for g in facts.tpu_generations.values()]
    types = [g.type_prefix for g in facts.tpu_generations.values()]
    alternatives = [re.escape(n) for n in sorted(names, key=len, reverse=True)]
    alternatives += [rf"{re.escape(p)}-[a-z]+-\d+t" for p in prefixes] + [rf"{re.escape(t)}-\d+" for t in types]
    alternatives += [re.escape(p) for p in prefixes]
    return re.compile(rf"(?<![\w.-])(?:{'|'.join(alternatives)})(?![\w.])")


def _string_constants(path: Path):
    """String constants a program can act on. Documentation is left out: docstrings, and the examples in a
    field's `description=` (schema text for people, e.g. 'GKE machine type, e.g. ...'), which no code reads."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    documentation = {id(node.body[0].value) for node in ast.walk(tree)
                     if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                     and node.body and isinstance(node.body[0], ast.Expr)
                     and isinstance(node.body[0].value, ast.Constant)}
    documentation |= {id(inner) for node in ast.walk(tree) if isinstance(node, ast.keyword) and node.arg == "description"
                      for inner in ast.walk(node.value)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in documentation:
            yield node.lineno, node.value


def test_no_machine_type_literal_appears_in_code_outside_the_table():
    pattern = _machine_literal_pattern()
    found = []
    for folder in CODE_DIRS:
        for path in sorted((REPO / folder).rglob("*.py")):
            if TABLE_DIR in path.parents:
                continue
            for line, text in _string_constants(path):
                match = pattern.search(text)
                if match:
                    found.append(f"{path.relative_to(REPO)}:{line}: {match.group(0)!r} in {text[:80]!r}")
    assert found == [], "machine facts belong in policies/hardware/facts.toml:\n" + "\n".join(found)


def test_the_literal_scan_catches_a_machine_type_in_a_string():
    pattern = _machine_literal_pattern()
    assert pattern.search("use a3-highgpu-8g here") and pattern.search("p5.48xlarge") and pattern.search("v5p-128")
    assert not pattern.search("gpudirect-tcpx") and not pattern.search("nvidia.com/gpu")


# ------------------------------------------------------------------------------ the table and its inverses


def test_every_machine_names_a_chip_of_its_family():
    facts = hardware.current()
    for machine in [*facts.gcp_gpu_machines.values(), *facts.aws_gpu_instances.values()]:
        assert facts.chips[machine.chip].family == "gpu", machine.name
    for generation in facts.tpu_generations.values():
        assert facts.chips[generation.accelerator].family == "tpu", generation.name


def test_every_machine_has_vcpus_and_memory_with_a_source():
    facts = hardware.current()
    for machine in [*facts.gcp_gpu_machines.values(), *facts.aws_gpu_instances.values(), *facts.tpu_machines.values()]:
        assert machine.vcpus > 0 and machine.memory_gb > 0 and len(machine.source) >= 3, machine.name


def test_inverses_agree_with_the_forward_tables():
    facts = hardware.current()
    for name, machine in facts.gcp_gpu_machines.items():
        assert facts.chip_of_machine(name).id == machine.chip
        assert facts.gke_accelerators()[machine.gke_accelerator] == machine.chip
        assert name in facts.machine_types_of_chip(machine.chip)["gcp"]
    for name, instance in facts.aws_gpu_instances.items():
        assert facts.gpu_machine(name) is instance
        assert name in facts.machine_types_of_chip(instance.chip)["aws"]
    for generation in facts.tpu_generations.values():
        assert facts.generation_of_machine_prefix(generation.machine_prefix) is generation
        assert facts.generation_of_type_prefix(generation.type_prefix) is generation
        assert facts.generation_of_config_type(generation.config_type) is generation
        assert facts.generation_of_chip(generation.accelerator) is generation
        for machine in generation.machine_types:
            assert facts.generation_of_tpu_machine(machine) is generation


def test_the_loader_needs_only_the_standard_library():
    """The CrossGuard pack imports the table with nothing but pulumi-policy installed."""
    probe = ("import sys, builtins\n"
             "real = builtins.__import__\n"
             "def guard(name, *a, **k):\n"
             "    if name.split('.')[0] in ('pydantic', 'yaml', 'ruamel', 'pulumi', 'typer', 'rich'):\n"
             "        raise ImportError('third-party import: ' + name)\n"
             "    return real(name, *a, **k)\n"
             "builtins.__import__ = guard\n"
             "from accel.policies import hardware\n"
             "print(len(hardware.current().gcp_gpu_machines))\n")
    result = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) > 0


# ------------------------------------------------------------------------------ malformed tables


def _write_table(tmp_path: Path, edit) -> Path:
    data = (TABLE_DIR / "facts.toml").read_text(encoding="utf-8")
    path = tmp_path / "facts.toml"
    path.write_text(edit(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t.replace('"a3-highgpu-8g" = { chip = "h100-80gb"', '"a3-highgpu-8g" = { chip = "h999"'),
     r"gcp_gpu_machines.a3-highgpu-8g.chip: no chip 'h999' in \[chips\]"),
    (lambda t: t.replace('"p5.48xlarge" = { fabric = "efa", chip = "h100-80gb", gpus = 8',
                         '"p5.48xlarge" = { fabric = "efa", chip = "h100-80gb", gpus = "eight"'),
     r"aws_gpu_instances.p5.48xlarge.gpus: expected int, got 'eight'"),
    (lambda t: t.replace('"g2-standard-4" = { chip = "l4", gke_accelerator = "nvidia-l4", gpus = 1',
                         '"g2-standard-4" = { chip = "tpu-v5e", gke_accelerator = "nvidia-l4", gpus = 1'),
     r"g2-standard-4.chip: 'tpu-v5e' is a tpu, not a gpu"),
    (lambda t: t.replace("[chips.l4]\n", "[chips.l4]\ncolour = \"green\"\n"), r"chips.l4: unknown key 'colour'"),
    (lambda t: t.replace('vm_type_counts = "chips"', 'vm_type_counts = "cores"', 1),
     r"tpu.v5e.vm_type_counts: 'cores' is not one of chips, tensorcores"),
    (lambda t: t + "\n[limits.broken]\nvalue = -3\nsource = \"eks-quotas\"\n", r"limits.broken.value: must be positive"),
    (lambda t: t.replace("[kubernetes]", "[kubernetes_names]"), r"unknown section \[kubernetes_names\]"),
    (lambda t: t.replace('multi_host_machine_type = "ct5p-hightpu-4t"', 'multi_host_machine_type = "ct5p-hightpu-16t"'),
     r"tpu.v5p uses machine type 'ct5p-hightpu-16t', which \[tpu_machines\] does not describe"),
    (lambda t: t + "\n[[[", r"not valid TOML"),
    (lambda t: t.replace('"p5.48xlarge" = { level = "topology.k8s.aws/network-node-layer-3"',
                         '"p5.48xlarge" = { level = "cloud.google.com/gce-topology-subblock"'),
     r"placement_units.p5.48xlarge.level: 'cloud.google.com/gce-topology-subblock' is not one of nvidia.com/gpu.clique, "
         r"topology.k8s.aws"),
        # An NVLink clique places only a machine whose NVLink domain joins machines (an H100 node is its own domain).
        (lambda t: t.replace('"p5.48xlarge" = { level = "topology.k8s.aws/network-node-layer-3"',
                             '"p5.48xlarge" = { level = "nvidia.com/gpu.clique"'),
         r"placement_units.p5.48xlarge.level: nvidia.com/gpu.clique is an NVLink clique, but p5.48xlarge's NVLink "
         r"domain does not join machines"),
    (lambda t: t.replace('"a4x-highgpu-4g" = { level = "cloud.google.com/gce-topology-subblock", nodes = 18',
                         '"a4x-highgpu-4g" = { level = "cloud.google.com/gce-topology-subblock", nodes = 0'),
     r"placement_units.a4x-highgpu-4g.nodes: must be positive"),
    # The NVLink domain is stated once, in [collective_fabrics]: a second statement on the chip is refused...
    (lambda t: t.replace("[chips.gb200]\n", "[chips.gb200]\nnvlink_domain_gpus = 36\n"),
     r"chips.gb200.nvlink_domain_gpus: a chip's NVLink domain is stated once, as \[collective_fabrics.gb200\] domain_chips"),
    # ...and the one statement must fit its chip: a TPU's domain is its slice, an NVLink GPU's a count, PCIe has none.
    (lambda t: t.replace("[collective_fabrics.tpu-v5p]\ndomain_chips = 0", "[collective_fabrics.tpu-v5p]\ndomain_chips = 8"),
     r"collective_fabrics.tpu-v5p.domain_chips: 8: TPU v5p is a TPU: its scale-up domain is the slice \(ICI\), state 0"),
    (lambda t: t.replace("[collective_fabrics.h100-80gb]\ndomain_chips = 8", "[collective_fabrics.h100-80gb]\ndomain_chips = 0"),
     r"collective_fabrics.h100-80gb.domain_chips: 0: H100 is an NVLink GPU: state the GPUs one NVLink domain joins"),
    (lambda t: t + '\n[collective_fabrics.l4]\ndomain_chips = 8\nscale_up_gbytes_per_s = 32\nscale_out_gbps = 50\n'
                   'source = "estimate"\n',
     r"collective_fabrics.l4.domain_chips: 8: L4's interconnect is 'pcie': no NVLink domain to state"),
    (lambda t: t.replace("[collective_fabrics.h800]\ndomain_chips = 8", "[collective_fabrics.h800]\ndomain_chips = -8"),
     r"collective_fabrics.h800.domain_chips: -8: a count of chips, or 0 for a TPU slice"),
])
def test_a_malformed_table_is_rejected_naming_the_entry(tmp_path, edit, message):
    path = _write_table(tmp_path, edit)
    with pytest.raises(HardwareFactsError, match=message) as error:
        load_facts(path)
    assert str(path) in str(error.value)


def test_whether_an_nvlink_domain_spans_machines_follows_the_one_domain_the_table_states(tmp_path):
    """nvlink_spans_nodes (a multi-node job claims an NVIDIA ComputeDomain) derives from [collective_fabrics]
    domain_chips, the value the Plan's expert parallelism reads too: edit it there and both follow."""
    bundled = hardware.current()
    assert bundled.nvlink_spans_nodes("a4x-highgpu-4g") and bundled.nvlink_spans_nodes("p6e-gb200.36xlarge")
    assert not bundled.nvlink_spans_nodes("a3-highgpu-8g") and not bundled.nvlink_spans_nodes("p5.48xlarge")
    # One GPU of an 8-GPU board: a domain larger than this machine, but not larger than the board it is cut from.
    for fraction in ("a3-highgpu-1g", "a3-highgpu-4g", "p5.4xlarge", "a2-highgpu-1g", "a2-ultragpu-2g"):
        assert not bundled.nvlink_spans_nodes(fraction), fraction
    assert not bundled.nvlink_spans_nodes("g2-standard-48") and not bundled.nvlink_spans_nodes("ct5p-hightpu-4t")

    def edit(text: str) -> str:
        for chip, old, new in (("gb200", 72, 4), ("h100-80gb", 8, 16)):
            stated = f"[collective_fabrics.{chip}]\ndomain_chips = {old}\n"
            assert stated in text, f"the {chip} collective fabric entry moved: update this test's edit"
            text = text.replace(stated, f"[collective_fabrics.{chip}]\ndomain_chips = {new}\n")
        # A GB200 node that is its own domain has no NVLink clique to be placed by (the table refuses one).
        clique = '"p6e-gb200.36xlarge" = { level = "nvidia.com/gpu.clique", nodes = 9,'
        assert clique in text, "the p6e-gb200 placement unit moved: update this test's edit"
        return text.replace(clique, '"p6e-gb200.36xlarge" = { level = "topology.k8s.aws/network-node-layer-3",')
    edited = load_facts(_write_table(tmp_path, edit))
    assert edited.scale_up_domain_chips("gb200") == 4 and edited.scale_up_domain_chips("h100-80gb") == 16
    assert not edited.nvlink_spans_nodes("a4x-highgpu-4g") and not edited.nvlink_spans_nodes("p6e-gb200.36xlarge")
    assert edited.nvlink_spans_nodes("a3-highgpu-8g") and edited.nvlink_spans_nodes("p5.48xlarge")


def test_a_missing_table_is_a_clear_error(tmp_path):
    with pytest.raises(HardwareFactsError, match="cannot read the hardware facts table"):
        load_facts(tmp_path / "nowhere.toml")


def test_the_bundled_table_parses_as_plain_toml():
    with (TABLE_DIR / "facts.toml").open("rb") as handle:
        assert tomllib.load(handle)["version"]


# ------------------------------------------------------------------------------ every consumer reads the table

# A fictional GPU machine and a changed fact (g2-standard-24 with 3 GPUs instead of 2), loaded through the
# loader's injection point: components, guardrails, review and the catalog must all see them.
FICTIONAL = '"z9-futuregpu-4g" = { chip = "h100-80gb", gke_accelerator = "nvidia-z9", gpus = 4, local_ssds = 2, ' \
            'bundled_ssd = true, vcpus = 64, memory_gb = 512 }\n'


@pytest.fixture
def changed_facts(tmp_path):
    def edit(text: str) -> str:
        text = text.replace('"g2-standard-24" = { chip = "l4", gke_accelerator = "nvidia-l4", gpus = 2, local_ssds = 2',
                            '"g2-standard-24" = { chip = "l4", gke_accelerator = "nvidia-l4", gpus = 3, local_ssds = 3')
        text = text.replace('"p4d.24xlarge" = { fabric = "efa", chip = "a100-40gb", gpus = 8, efa_cards = 4',
                            '"p4d.24xlarge" = { fabric = "efa", chip = "a100-40gb", gpus = 8, efa_cards = 2')
        return text.replace('"g2-standard-4" = {', FICTIONAL + '"g2-standard-4" = {')
    facts = load_facts(_write_table(tmp_path, edit))
    assert facts.gcp_gpu_machines["g2-standard-24"].gpus == 3   # the edit took
    with hardware.using(facts):
        yield facts


def test_the_gcp_gpu_component_builds_a_machine_only_the_injected_table_has(declare, changed_facts):
    from accel.components.gcp.gpu import GpuNodePool
    from tests.test_gcp_gpu import NODE_POOL, pool_args

    pool = GpuPool(accelerator="h100-80gb", machine_type="z9-futuregpu-4g", gpus_per_node=4, nodes=2)
    capture = declare(lambda: GpuNodePool("gpu", pool_args(pool)))
    (node_pool,) = capture.of_type(NODE_POOL)
    config = node_pool.inputs["nodeConfig"]
    assert config["guestAccelerators"][0]["type"] == "nvidia-z9"
    assert config["guestAccelerators"][0]["count"] == 4
    assert config["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": 2}


def test_the_gcp_gpu_component_refuses_the_old_gpu_count_of_a_changed_machine(declare, changed_facts):
    from accel.base.errors import ComponentArgsError
    from tests.test_gcp_gpu import rejected

    old = GpuPool(accelerator="l4", machine_type="g2-standard-24", gpus_per_node=2, nodes=1)
    error = rejected(declare, "pool.gpus_per_node", old)
    assert isinstance(error, ComponentArgsError) and "has 3 GPU(s)" in str(error)


def test_the_aws_gpu_component_reads_the_changed_efa_cards(changed_facts):
    from accel.base.errors import ComponentArgsError
    from tests.test_aws_gpu import P4D_EFA, args

    with pytest.raises(ComponentArgsError, match="p4d.24xlarge has 2 EFA-capable network card"):
        args(P4D_EFA)   # four interfaces, the bundled table's figure, no longer fit


def test_the_guardrails_read_the_changed_gpu_count(changed_facts):
    from tests.test_guardrails import GPU_TAINT, gke_pool, messages_for

    declared_two = gke_pool(machine="g2-standard-24", taints=[GPU_TAINT],
                            accelerators=[{"type": "nvidia-l4", "count": 2.0}])
    [message] = messages_for("gpu-count-matches-machine", [declared_two])
    assert "g2-standard-24 comes with 3 x nvidia-l4" in message
    fictional = gke_pool(machine="z9-futuregpu-4g", taints=[GPU_TAINT])
    [message] = messages_for("gpu-count-matches-machine", [fictional])
    assert "z9-futuregpu-4g has 4 x nvidia-z9" in message


def test_the_review_reads_the_changed_and_the_fictional_machine(changed_facts):
    from accel.review.hardware import accelerator_pool

    changed = accelerator_pool("gcp:container/nodePool:NodePool",
                               {"nodeCount": 2, "nodeConfig": {"machineType": "g2-standard-24"}})
    fictional = accelerator_pool("gcp:container/nodePool:NodePool",
                                 {"nodeCount": 2, "nodeConfig": {"machineType": "z9-futuregpu-4g"}})
    assert changed.chips == 2 * 3
    assert (fictional.accelerator, fictional.chips) == (changed_facts.chips["h100-80gb"].name, 2 * 4)


def test_the_catalog_takes_machine_facts_from_the_injected_table(changed_facts):
    from accel.policies.catalog import BUNDLED_DIR, load_catalog

    offering = load_catalog(BUNDLED_DIR).offering("gcp-g2-standard-24")   # a fresh build, not the cached one
    assert offering.chips_per_host == 3


def test_without_the_injection_the_bundled_facts_are_back(changed_facts, tmp_path):
    with hardware.using(load_facts()):
        assert hardware.current().gcp_gpu_machines["g2-standard-24"].gpus == 2
        assert "z9-futuregpu-4g" not in hardware.current().gcp_gpu_machines
    assert hardware.current() is changed_facts


def test_every_selectable_chip_with_a_scale_up_domain_states_its_collective_fabric(tmp_path):
    """A TPU's slice (ICI) and an NVLink GPU's domain are what a mixture of experts' all-to-all crosses: a selectable
    chip without [collective_fabrics] had its all-to-all costed as free, 'within one node' (tpu7x did)."""
    bundled = hardware.current()
    for chip in bundled.chips.values():
        if chip.selectable and (chip.family == "tpu" or chip.interconnect == "nvlink"):
            assert bundled.collective_fabric(chip.id) is not None, chip.id
    assert bundled.scale_up_domain_chips("tpu7x") == 0
    path = _write_table(tmp_path, lambda t: t.replace("[collective_fabrics.tpu-v5p]",
                                                          "[collective_fabrics.not-a-chip]"))
    with pytest.raises(HardwareFactsError, match=r"chips.tpu-v5p is selectable but has no \[collective_fabrics.tpu-v5p\]"):
        load_facts(path)
