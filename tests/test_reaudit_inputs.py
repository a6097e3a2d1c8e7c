"""The 2026-11-26 findings' batteries re-run on 2026-11-27's main: each case here held at 4289b53 and no
longer did, or was never covered by the project's own tests. Every input is valid or refused in the
user's words; none costs more memory or time than the answer needs.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PRETRAIN = yaml.safe_load((ROOT / "examples" / "llama-70b-pretrain.yaml").read_text())   # JAX: TPUs are tried


def _two_gib_of_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_a_max_chips_far_past_any_fleet_is_chosen_in_bounded_memory(tmp_path):
    # Before: the TPU sequence fit laid out every multislice up to max_chips to keep its single slices, so
    # 10**8 chips took 8 s and 600 MiB and 10**29 (valid: a positive integer) grew until killed.
    workload = yaml.safe_load(yaml.safe_dump(PRETRAIN))
    workload["constraints"].update(max_chips=10**29)
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(workload))
    outcome = subprocess.run([sys.executable, "-m", "accel.cli", "choose", str(path)], cwd=ROOT, capture_output=True,
                             text=True, timeout=300, preexec_fn=_two_gib_of_address_space,
                             env={**os.environ, "ACCEL_CACHE_DIR": "off"})
    assert "Traceback" not in outcome.stderr and "MemoryError" not in outcome.stderr
    assert outcome.returncode == 0, outcome.stderr[-2000:]


def run(*args):
    from typer.testing import CliRunner

    from accel.cli import _register_commands, app

    _register_commands()
    return CliRunner().invoke(app, [str(a) for a in args])


def test_job_check_refuses_an_output_it_would_not_write(tmp_path):
    # Before: exit 0, and -o FILE was silently left unwritten (--check writes no manifests); a pipeline reading
    # FILE next found nothing, or an older file. With --json the check's report is what -o writes.
    manifests = tmp_path / "job.yaml"
    assert run("job", "-s", "dev-spot", "-C", ROOT, "-o", manifests).exit_code == 0
    report = tmp_path / "check.out"
    refused = run("job", "-s", "dev-spot", "-C", ROOT, "--check", manifests, "-o", report)
    assert refused.exit_code == 2, refused.output
    assert "-o" in refused.output and "would be ignored" in refused.output and "Traceback" not in refused.output
    assert not report.exists()
    written = run("job", "-s", "dev-spot", "-C", ROOT, "--check", manifests, "--json", "-o", report)
    assert written.exit_code == 0, written.output
    assert '"schedulable": true' in report.read_text()


def _pinned(tmp_path, hardware: dict) -> Path:
    workload = yaml.safe_load(yaml.safe_dump(PRETRAIN))
    workload["hardware"] = hardware
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(workload))
    return path


@pytest.mark.parametrize("hardware, field", [
    ({"accelerator": "tpu-v6e", "chips": 10**6}, "hardware.chips"),       # laid out as 3,907 slices of 16x16
    ({"accelerator": "tpu-v6e", "chips": 16_385}, "hardware.chips"),      # one chip past 64 x 16x16
    ({"accelerator": "tpu-v6e", "topology": "16x16", "slices": 100}, "hardware.slices"),
    ({"accelerator": "tpu-v6e", "topology": "16x16", "chips": 256 * 65}, "hardware.chips"),
])
def test_a_tpu_pin_past_the_slices_one_stack_builds_is_refused_naming_the_field(tmp_path, hardware, field):
    # Before: exit 2 as "TpuSlice.slices: 100 is not valid; allowed: 1..64", naming neither the file nor the pin's
    # key (and 10**9 chips grew past 3 GiB laying the multislices out).
    outcome = run("choose", _pinned(tmp_path, hardware))
    assert outcome.exit_code == 2, outcome.output
    assert f"w.yaml: {field}:" in outcome.output and "64" in outcome.output and "Traceback" not in outcome.output


def test_a_tpu_pin_of_sixty_four_slices_is_estimated(tmp_path):
    outcome = run("choose", _pinned(tmp_path, {"accelerator": "tpu-v6e", "topology": "16x16", "slices": 64}), "--json")
    assert outcome.exit_code == 0, outcome.output


def test_the_search_offers_no_multislice_a_stack_would_refuse(tmp_path):
    # Before: a max_chips and a global batch far past any fleet (both valid) laid out every multislice up to them
    # (MemoryError), and fleets of hundreds of slices were offered, which TpuSlice refuses past 64.
    from accel.policies.selection.pools import MAX_SLICES

    workload = yaml.safe_load(yaml.safe_dump(PRETRAIN))
    workload["constraints"]["max_chips"] = 10**12
    workload["training"].update(global_batch_tokens=10**14, tokens="1000T")
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(workload))
    outcome = subprocess.run([sys.executable, "-m", "accel.cli", "choose", str(path), "--json"], cwd=ROOT,
                             capture_output=True, text=True, timeout=300, preexec_fn=_two_gib_of_address_space,
                             env={**os.environ, "ACCEL_CACHE_DIR": "off"})
    assert outcome.returncode in (0, 3), outcome.stderr[-2000:]
    document = json.loads(outcome.stdout)
    fleets = [*document["options"], *([document["closest"]] if document.get("closest") else [])]
    tpu = [fleet for fleet in fleets if fleet["family"] == "tpu"]
    assert tpu and all(fleet["slices"] <= MAX_SLICES for fleet in tpu)


def test_a_json_string_is_skipped_in_memory_that_does_not_grow_with_its_length():
    # Before: the depth check kept ~150 bytes per character of a JSON string (Python's re records each repetition
    # of '(?:[^"\\]|\\.)*'): accel review of a preview with a 10 MB resource name peaked at 1.2 GB, and JSON inputs
    # may be 256 MiB.
    import tracemalloc

    from accel.base.json_limits import nesting_depth

    text = json.dumps({"steps": [{"urn": "x" * 2_000_000 + '\\"]]}}' * 3}]})
    tracemalloc.start()
    try:
        assert nesting_depth(text) == 3
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * len(text)



def test_a_quoted_property_key_is_parsed_in_memory_that_does_not_grow_with_its_length():
    # Before: ~230 bytes per character of a detailedDiff key like labels["..."] (the same regex shape).
    import tracemalloc

    from accel.review.property_paths import parse_path

    path = 'nodeConfig.labels["' + "x" * 2_000_000 + '\\"y"].value'
    tracemalloc.start()
    try:
        assert parse_path(path) == ["nodeConfig", "labels", "x" * 2_000_000 + '"y', "value"]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * len(path)


@pytest.mark.parametrize("value, words", [
    ("", "--busy-limit: a duration is empty"),
    ("999999999w", "--busy-limit: duration '999999999w' is longer than 3,660 days"),
    ("abc", "--busy-limit: duration 'abc' is not written as a duration"),
])
def test_reap_names_its_busy_limit_a_duration_not_a_ttl(tmp_path, value, words):
    # Before: "--busy-limit: a TTL is empty", "--busy-limit: TTL '999999999w' ...": the option is no TTL.
    (tmp_path / "Pulumi.yaml").write_text("name: accel\nruntime: python\n")
    outcome = run("reap", "--dry-run", "--work-dir", tmp_path, "--busy-limit", value)
    assert outcome.exit_code == 2 and words in outcome.output and "TTL" not in outcome.output
