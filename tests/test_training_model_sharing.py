"""A search shares one training model between offerings of one chip and cloud only where the model would read the
same facts of their machines: the machine's own NVLink domain entry where the hardware table states one
(SearchContext.model_key). Two machines with own entries of equal size are two entries, each named in the
mixture-of-experts assumption's source, not the first one timed."""

from __future__ import annotations

from accel.policies import hardware
from accel.policies.hardware import load_facts
from accel.policies.selection.candidates import search_context
from tests.test_nvlink_domains import MEGA, TABLE, _moe_workload


def test_two_machines_with_own_domains_of_one_size_each_cite_their_own_entry(a2_mega_catalog, tmp_path):
    text = TABLE.read_text(encoding="utf-8")
    assert MEGA in text
    start = text.index(MEGA)
    entry = text[start:text.index("\n\n", start) + 1]
    # A hypothetical second 16-GPU domain of the same chip and cloud (a test table only).
    path = tmp_path / "facts.toml"
    path.write_text(text.replace(entry, entry + "\n" + entry.replace("a2-megagpu-16g]", "a2-highgpu-8g]")),
                    encoding="utf-8")
    with hardware.using(load_facts(path)):
        ctx = search_context(_moe_workload(), a2_mega_catalog, "cost")
        offerings = {o.machine_type: o for o in a2_mega_catalog.offerings if o.accelerator == "a100-40gb"}
        mega = ctx.training_model(offerings["a2-megagpu-16g"], False).moe
        high = ctx.training_model(offerings["a2-highgpu-8g"], False).moe
    assert "machines.a2-megagpu-16g" in mega.source
    assert "machines.a2-highgpu-8g" in high.source and "a2-megagpu-16g" not in high.source
