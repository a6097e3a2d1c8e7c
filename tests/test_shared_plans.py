"""tests/shared.py: what the suite's workers build once per run and share (the stacks' plans)."""

from __future__ import annotations

import pytest

from tests import shared

fcntl = pytest.importorskip("fcntl")


@pytest.fixture
def sharing(tmp_path):
    """Share through a directory of this test's own, as a worker shares through its run's; put back after."""
    previous = shared.directory()
    shared.share_within(tmp_path / "shared")
    yield tmp_path / "shared"
    shared.share_within(previous)


class Builder:
    def __init__(self, value):
        self.value, self.calls = value, 0

    def __call__(self):
        self.calls += 1
        return self.value


def test_a_value_is_built_once_and_read_back_as_an_equal_copy(sharing):
    build = Builder({"plan": [1, 2, 3]})
    first = shared.shared_value("k", build)
    again = shared.shared_value("k", build)
    assert build.calls == 1
    assert again == first and again is not first  # read back from the run's directory


def test_a_failed_build_stores_nothing_and_the_next_asker_builds(sharing):
    def failing():
        raise RuntimeError("the plan failed")

    with pytest.raises(RuntimeError):
        shared.shared_value("k", failing)
    build = Builder(7)
    assert shared.shared_value("k", build) == 7 and build.calls == 1


def test_a_batch_skips_what_another_worker_is_building_and_reads_it_last(sharing):
    order: list[str] = []

    def builder(key):
        def build():
            order.append(key)
            return key.upper()
        return build

    with open(sharing / "a.lock", "a") as other_worker:
        fcntl.flock(other_worker, fcntl.LOCK_EX)
        taken = {key: shared._take(key, builder(key), wait=False) for key in "abc"}
        fcntl.flock(other_worker, fcntl.LOCK_UN)
    assert taken["a"] is shared._MISSING and (taken["b"], taken["c"]) == ("B", "C")
    assert shared.shared_values({key: builder(key) for key in "abc"}) == {"a": "A", "b": "B", "c": "C"}
    assert order == ["b", "c", "a"]  # "a" built once the other worker let go; "b" and "c" read back


def test_alone_every_value_is_built_in_the_process(tmp_path):
    previous = shared.directory()
    shared.share_within(None)
    try:
        build = Builder(1)
        shared.shared_value("k", build)
        shared.shared_value("k", build)
        assert build.calls == 2
    finally:
        shared.share_within(previous)


def test_only_a_worker_of_xdist_shares(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    assert shared.run_dir_of(tmp_path / "popen-gw0") is None
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    assert shared.run_dir_of(tmp_path / "popen-gw0") == tmp_path / "shared-between-workers"
