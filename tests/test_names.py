"""Every stack and example builds what its name says.

A name's words that name hardware or a cloud (`tpu`, `gpu`, `v5p`, `l4`, `aws`, ...) must be words
of what the stack plans or the example chooses; other words (`llama`, `70b`, `serving`) say nothing
about hardware and are not checked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from accel.policies.catalog import load_catalog

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def hardware_words() -> set[str]:
    """Words that promise hardware: families, clouds and accelerator ids and their parts (tpu-v5p: tpu, v5p)."""
    catalog = load_catalog()
    words = {"tpu", "gpu"} | {o.cloud for o in catalog.offerings}
    for offering in catalog.offerings:
        words |= {offering.accelerator, *offering.accelerator.split("-")}
    return {w for w in words if not w.removesuffix("gb").isdigit()}


def words_of(option: dict) -> set[str]:
    return {option["family"], option["cloud"], option["accelerator"], *option["accelerator"].split("-")}


def promised(name: str) -> set[str]:
    return set(name.lower().split("-")) & hardware_words()


def test_the_hardware_words_catch_the_old_misleading_names():
    assert promised("llama-8b-serving-l4") == {"l4"}
    assert promised("llama-8b-inference-l4") == {"l4"}
    assert not {"l4"} <= words_of({"family": "gpu", "cloud": "aws", "accelerator": "l40s"})


def test_every_stack_builds_what_its_name_says(planned_stacks):
    wrong = {name: sorted(promised(name) - words_of(doc["plan"]["chosen"]))
             for name, doc in planned_stacks.items() if doc.get("plan")}
    assert {name: words for name, words in wrong.items() if words} == {}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_chooses_what_its_name_says(example):
    from accel.policies.selection.choose import choose
    from accel.policies.workload import load_workload

    chosen = choose(load_workload(example), load_catalog()).chosen.model_dump(mode="json")
    assert promised(example.stem) <= words_of(chosen)
