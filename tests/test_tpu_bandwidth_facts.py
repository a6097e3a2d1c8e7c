"""A TPU generation's bandwidths are stated in three places that must agree: its DCN per chip in [tpu.<gen>],
its ICI (one direction) and DCN in [collective_fabrics.<chip>] (policies/hardware/facts.toml), and its ICI in the
job's validate table (accel/job/runtime.yaml tpu_ici_gbytes). The 2026-11-27 fact check found two that did not
(TPU7x ICI stated bidirectionally, v6e DCN left at an old estimate)."""

from __future__ import annotations

from pathlib import Path

import yaml

from accel.policies import hardware

RUNTIME = Path(__file__).resolve().parents[1] / "accel" / "job" / "runtime.yaml"


def disagreements(generations: dict, fabrics: dict, ici_gbytes: dict) -> list[str]:
    """Every TPU generation whose bandwidth differs between the three places, one line each."""
    found = []
    for name, gen in generations.items():
        fabric = fabrics.get(gen["chip"])
        if fabric is None:
            found.append(f"{name}: no [collective_fabrics.{gen['chip']}]")
            continue
        if fabric["scale_out_gbps"] != gen["dcn_gbps_per_chip"]:
            found.append(f"{name}: DCN {gen['dcn_gbps_per_chip']} Gb/s in [tpu] but {fabric['scale_out_gbps']} "
                         "in [collective_fabrics]")
        if ici_gbytes.get(name) != fabric["scale_up_gbytes_per_s"]:
            found.append(f"{name}: ICI {fabric['scale_up_gbytes_per_s']} GB/s one way in [collective_fabrics] but "
                         f"{ici_gbytes.get(name)} in runtime.yaml tpu_ici_gbytes")
    return found


def _tables() -> tuple[dict, dict, dict]:
    facts = hardware.current()
    generations = {name: {"chip": g.accelerator, "dcn_gbps_per_chip": g.dcn_gbps_per_chip}
                   for name, g in facts.tpu_generations.items()}
    fabrics = {}
    for gen in generations.values():
        fabric = facts.collective_fabric(gen["chip"])
        if fabric is not None:
            fabrics[gen["chip"]] = {"scale_out_gbps": fabric.scale_out_gbps,
                                    "scale_up_gbytes_per_s": fabric.scale_up_gbytes_per_s}
    runtime = yaml.safe_load(RUNTIME.read_text())
    ici = {name: row["value"] for name, row in runtime["validate"]["tpu_ici_gbytes"].items()}
    return generations, fabrics, ici


def test_every_tpu_generation_states_one_dcn_and_one_ici_figure():
    assert disagreements(*_tables()) == []


def test_a_bidirectional_ici_figure_or_a_stale_dcn_figure_is_caught():
    generations, fabrics, ici = _tables()
    fabrics["tpu7x"] = {**fabrics["tpu7x"], "scale_up_gbytes_per_s": 1200}   # the bidirectional figure
    fabrics["tpu-v6e"] = {**fabrics["tpu-v6e"], "scale_out_gbps": 25}        # the old estimate
    found = disagreements(generations, fabrics, ici)
    assert any(line.startswith("tpu7x: ICI 1200") for line in found)
    assert any(line.startswith("v6e: DCN 100") for line in found)
