"""without_none: the unset entries are left out, nothing else changes (the set ones keep their order)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from accel.base.mappings import without_none


def test_none_is_left_out_but_falsy_values_stay():
    assert without_none({"ttl": None, "ephemeral": False, "size": 0, "name": ""}) == \
        {"ephemeral": False, "size": 0, "name": ""}


@given(st.dictionaries(st.text(max_size=3), st.none() | st.integers() | st.booleans()))
def test_the_set_entries_in_their_order(mapping):
    assert list(without_none(mapping).items()) == [(k, v) for k, v in mapping.items() if v is not None]
