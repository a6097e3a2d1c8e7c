"""The derived-data cache: a value is computed once per set of inputs and read back until a data
file, the code or the versions change; a cache that cannot be used is skipped, never an error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accel.base import derived_cache

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


class Counter:
    def __init__(self, value="derived"):
        self.calls = 0
        self.value = value

    def __call__(self):
        self.calls += 1
        return {"value": self.value, "call": self.calls}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv(derived_cache.CACHE_DIR_VARIABLE, str(directory))
    monkeypatch.setattr(derived_cache, "_fingerprints", {})
    return directory


@pytest.fixture
def inputs(tmp_path):
    data = tmp_path / "data.yaml"
    data.write_text("a: 1\n")
    code = tmp_path / "code"
    code.mkdir()
    (code / "module.py").write_text("X = 1\n")
    return data, code


def test_a_value_is_computed_once_and_read_back_while_nothing_changed(cache, inputs):
    data, code = inputs
    compute = Counter()
    first = derived_cache.cached("thing", [data], compute, code=[code])
    derived_cache._fingerprints.clear()  # as a new process would
    second = derived_cache.cached("thing", [data], compute, code=[code])
    assert compute.calls == 1
    assert second == first


def test_a_changed_data_file_is_computed_again(cache, inputs):
    data, code = inputs
    compute = Counter()
    derived_cache.cached("thing", [data], compute, code=[code])
    data.write_text("a: 2\n")
    derived_cache.cached("thing", [data], compute, code=[code])
    assert compute.calls == 2


def test_changed_code_is_computed_again(cache, inputs):
    data, code = inputs
    compute = Counter()
    derived_cache.cached("thing", [data], compute, code=[code])
    (code / "module.py").write_text("X = 22\n")
    derived_cache._fingerprints.clear()
    derived_cache.cached("thing", [data], compute, code=[code])
    assert compute.calls == 2


def test_another_extra_input_is_another_entry(cache, inputs):
    data, code = inputs
    compute = Counter()
    derived_cache.cached("thing", [data], compute, code=[code], extra=("peaks", 1.0))
    derived_cache.cached("thing", [data], compute, code=[code], extra=("peaks", 2.0))
    assert compute.calls == 2


def test_an_error_is_never_cached(cache, inputs):
    data, code = inputs
    calls = []

    def failing():
        calls.append(1)
        raise ValueError("bad input")

    for _ in range(2):
        with pytest.raises(ValueError, match="bad input"):
            derived_cache.cached("thing", [data], failing, code=[code])
    assert len(calls) == 2
    assert not list(cache.rglob("*.pickle"))


def test_a_missing_input_file_is_left_to_compute_to_report(cache, tmp_path):
    compute = Counter()
    assert derived_cache.cached("thing", [tmp_path / "absent.yaml"], compute)["call"] == 1


def test_a_corrupt_entry_is_a_miss_and_is_replaced(cache, inputs):
    data, code = inputs
    compute = Counter()
    derived_cache.cached("thing", [data], compute, code=[code])
    (entry,) = cache.rglob("*.pickle")
    entry.write_bytes(b"not a pickle")
    assert derived_cache.cached("thing", [data], compute, code=[code])["call"] == 2
    assert derived_cache.cached("thing", [data], compute, code=[code])["call"] == 2


def test_an_unwritable_cache_is_skipped_without_an_error(tmp_path, monkeypatch, inputs):
    data, code = inputs
    blocker = tmp_path / "a-file-not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv(derived_cache.CACHE_DIR_VARIABLE, str(blocker / "cache"))
    compute = Counter()
    for expected in (1, 2):
        assert derived_cache.cached("thing", [data], compute, code=[code])["call"] == expected


@pytest.mark.parametrize("setting", ["off", ""])
def test_the_cache_can_be_turned_off(tmp_path, monkeypatch, inputs, setting):
    data, code = inputs
    monkeypatch.setenv(derived_cache.CACHE_DIR_VARIABLE, setting)
    compute = Counter()
    derived_cache.cached("thing", [data], compute, code=[code])
    derived_cache.cached("thing", [data], compute, code=[code])
    assert compute.calls == 2


def test_without_a_setting_the_cache_is_the_platform_user_cache(monkeypatch):
    from platformdirs import user_cache_path

    monkeypatch.delenv(derived_cache.CACHE_DIR_VARIABLE, raising=False)
    assert derived_cache.cache_dir() == user_cache_path("accel", appauthor=False)


def test_only_the_newest_entries_of_a_kind_are_kept(cache, inputs):
    data, code = inputs
    for version in range(derived_cache.KEEP + 3):
        derived_cache.cached("thing", [data], Counter(), code=[code], extra=version)
    assert len(list((cache / "thing").glob("*.pickle"))) == derived_cache.KEEP


def test_the_catalog_read_back_equals_the_catalog_validated_afresh(cache):
    from accel.policies.catalog import loader

    fresh = loader._build(loader._read_directory(loader.BUNDLED_DIR))
    stored = derived_cache.cached("catalog-test", [loader.BUNDLED_DIR / "offerings.yaml"],
                                  lambda: loader._build(loader._read_directory(loader.BUNDLED_DIR)))
    derived_cache._fingerprints.clear()
    read_back = derived_cache.cached("catalog-test", [loader.BUNDLED_DIR / "offerings.yaml"],
                                     lambda: pytest.fail("the entry should have been read back"))
    assert stored == fresh
    assert read_back == fresh
    assert read_back is not fresh


def _choose_json(example: Path, cache_setting: str) -> bytes:
    env = {**os.environ, derived_cache.CACHE_DIR_VARIABLE: cache_setting}
    return subprocess.run([sys.executable, "-m", "accel.cli", "choose", str(example), "--json"], cwd=ROOT, env=env,
                          capture_output=True, check=True).stdout


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.stem)
def test_choose_json_is_byte_identical_without_the_cache_and_with_it_cold_and_warm(tmp_path, example):
    """Every example's `accel choose --json` without any cache (the code path before the cache),
    with an empty cache (filling it) and with the filled cache. One test per example, so parallel
    workers share the 18 processes."""
    uncached = _choose_json(example, "off")
    assert json.loads(uncached)["chosen"] is not None
    cache = str(tmp_path / example.stem)
    assert _choose_json(example, cache) == uncached
    assert list(Path(cache).rglob("*.pickle"))
    assert _choose_json(example, cache) == uncached


def test_a_workload_with_an_error_fails_the_same_way_on_every_run(tmp_path):
    workload = tmp_path / "w.yaml"
    workload.write_text((ROOT / "examples" / "llama-70b-pretrain.yaml").read_text().replace("kind: pretrain", "kind: pretrian"))
    env = {**os.environ, derived_cache.CACHE_DIR_VARIABLE: str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-m", "accel.cli", "choose", str(workload)], cwd=ROOT, env=env,
                           capture_output=True, text=True) for _ in range(2)]
    assert [run.returncode for run in runs] == [2, 2]
    assert runs[0].stderr == runs[1].stderr
    assert "kind" in runs[0].stderr


def test_under_another_facts_table_nothing_is_read_from_or_written_to_the_cache(cache, tmp_path, monkeypatch):
    from accel.policies import hardware
    from accel.policies.catalog import loader

    monkeypatch.setattr(loader, "_BUNDLED", None)
    other = hardware.load_facts()   # reading the table may cache it, as any first read in a process does
    before = set(cache.rglob("*.pickle"))
    with hardware.using(other):
        assert not hardware.bundled_in_use()
        loader.load_catalog(None)
    assert set(cache.rglob("*.pickle")) == before, "the catalog checked under another facts table was cached"
    assert hardware.bundled_in_use()


def test_another_pydantic_version_is_computed_again(cache, inputs, monkeypatch):
    data, code = inputs
    compute = Counter()
    derived_cache.cached("thing", [data], compute, code=[code])
    monkeypatch.setattr(derived_cache, "_pydantic_version", lambda: "0.0.0-another")
    derived_cache.cached("thing", [data], compute, code=[code])
    assert compute.calls == 2
