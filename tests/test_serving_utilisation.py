"""A serving fleet's utilisation is the share of the peak its replicas compute at: an fp8 replica (fp8 tensor
cores) is measured against the fp8 peak, a bf16 one against the bf16 peak. Against the bf16 peak an fp8 fleet read
up to twice what it uses: the audit4 sweep found a prefill-bound fp8 70B on B200 at 78%."""

import pytest

from accel.policies import hardware
from accel.policies.catalog import load_catalog
from accel.policies.selection.choose import choose
from accel.policies.workload import workload_from_mapping


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def serving(precision: str):
    return workload_from_mapping({
        "name": "t", "kind": "inference", "model": {"parameters": "70B", "sequence_length": 8192},
        "inference": {"tokens_per_second": 20000, "p99_latency_ms": 200, "precision": precision,
                      "prompt_tokens": 2000, "output_tokens": 500},
        "constraints": {"clouds": ["aws"], "spot": "never", "accelerators": ["b200"]}}, "t.yaml")


@pytest.mark.parametrize("precision", ["bf16", "fp8"])
def test_utilisation_is_a_share_of_the_peak_the_replica_computes_at(catalog, precision):
    choice = choose(serving(precision), catalog)
    option, estimate = choice.chosen, choice.estimate
    facts = hardware.current().chips["b200"]
    peak = (facts.peak_fp8_tflops if precision == "fp8" else facts.peak_bf16_tflops) * 1e12
    used = estimate.flops / (option.chips * peak)   # FLOP/s of the target over the fleet's peak
    assert option.mfu == pytest.approx(used, rel=1e-3)
