"""Every user YAML (workload, stack, catalog overlay, policy config) is read by accel.base.yaml_files."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from accel.base.errors import UsageError
from accel.base.yaml_files import StrictSafeLoader, parse_yaml, read_yaml_file
from accel.policies.workload import load_workload
from accel.stack_config import load_stack_config


def write(tmp_path, text: str, name: str = "f.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_libyaml_parser_is_used_when_pyyaml_has_it():
    expected = yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader
    assert issubclass(StrictSafeLoader, expected)


def test_a_duplicate_key_is_refused_naming_the_key_and_both_lines(tmp_path):
    path = write(tmp_path, "name: a\nkind: pretrain\nname: b\n")
    with pytest.raises(UsageError) as raised:
        read_yaml_file(path, "workload file")
    assert str(raised.value).startswith(f"{path}: duplicate key 'name' (first on line 1, again on line 3)")


def test_a_duplicate_key_in_a_nested_mapping_names_its_lines(tmp_path):
    path = write(tmp_path, "config:\n  accel:ttl: 12h\n  accel:owner: me\n  accel:ttl: 3d\n")
    with pytest.raises(UsageError, match=r"duplicate key 'accel:ttl' \(first on line 2, again on line 4\)"):
        read_yaml_file(path, "stack file")


def test_a_duplicate_key_in_a_workload_file_stops_the_load(tmp_path):
    path = write(tmp_path, "name: w\nkind: pretrain\nkind: finetune\n", "w.yaml")
    with pytest.raises(UsageError, match="duplicate key 'kind'"):
        load_workload(path)


def test_a_duplicate_key_in_a_stack_file_stops_the_load(tmp_path):
    (tmp_path / "Pulumi.yaml").write_text("name: accel\nruntime: python\nstackConfigDir: stacks\n")
    (tmp_path / "stacks").mkdir()
    write(tmp_path / "stacks", "config:\n  accel:ttl: 12h\n  accel:ttl: 3d\n", "Pulumi.dev.yaml")
    with pytest.raises(UsageError, match=r"Pulumi\.dev\.yaml: duplicate key 'accel:ttl'"):
        load_stack_config(tmp_path, "dev")


def test_a_merge_key_may_still_override_what_it_merges():
    assert parse_yaml("base: &b {k: 1, j: 2}\nderived:\n  <<: *b\n  k: 3\n")["derived"] == {"k": 3, "j": 2}


def test_an_impossible_date_is_a_usage_error_not_a_traceback(tmp_path):
    with pytest.raises(UsageError, match="not valid YAML: day is out of range"):
        read_yaml_file(write(tmp_path, "expiresAt: 2026-02-30\n"), "stack file")


_scalars = st.one_of(st.integers(), st.booleans(), st.text("abcxyz-_ ", max_size=8))
_keys = st.text("abcdefgh", min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(_keys, _scalars, min_size=1, max_size=6), st.data())
def test_any_mapping_with_one_key_repeated_is_refused_and_without_it_reads_back(mapping, data):
    text = yaml.safe_dump(mapping, sort_keys=False)
    assert parse_yaml(text) == mapping
    repeated = data.draw(st.sampled_from(sorted(mapping)))
    doubled = text + yaml.safe_dump({repeated: "again"})
    with pytest.raises(yaml.YAMLError, match=f"duplicate key {repeated!r}"):
        parse_yaml(doubled)
