"""Every user YAML (workload, stack, catalog overlay, policy config) is read by accel.base.yaml_files."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from accel.base.errors import UsageError
from accel.base.yaml_files import StrictSafeLoader, parse_yaml, read_yaml_file
from accel.policies.workload import load_workload
from accel.stack.config import load_stack_config


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


# --- bounds: size, depth, alias expansion (accel.base.yaml_files.check_yaml_bounds) ------------------

from accel.base import yaml_files  # noqa: E402
from accel.base.json_limits import MAX_DEPTH  # noqa: E402


def flow_nested(depth: int) -> str:
    return "a: " + "[" * (depth - 1) + "]" * (depth - 1) + "\n"


def block_nested(depth: int) -> str:
    return "".join(f"{'  ' * level}k{level}:\n" for level in range(depth - 1)) + f"{'  ' * (depth - 1)}k: v\n"


def laughs(levels: int, fan_out: int = 9) -> str:
    """The "billion laughs" document: each anchor's list aliases the previous anchor fan_out times."""
    lines = ['a0: &a0 "lol"']
    for level in range(1, levels + 1):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * fan_out)}]")
    return "\n".join(lines) + "\n"


@settings(max_examples=15, deadline=None)
@given(extra=st.integers(min_value=1, max_value=3_000), style=st.sampled_from([flow_nested, block_nested]))
def test_yaml_nested_past_the_depth_bound_is_refused_without_recursing(tmp_path_factory, extra, style):
    path = write(tmp_path_factory.mktemp("deep"), style(MAX_DEPTH + extra))
    with pytest.raises(UsageError, match=f"{path}: nested more than {MAX_DEPTH} levels deep at line"):
        read_yaml_file(path, "workload file")


@pytest.mark.parametrize("style", [flow_nested, block_nested])
def test_yaml_nested_exactly_to_the_depth_bound_reads(tmp_path, style):
    assert isinstance(read_yaml_file(write(tmp_path, style(MAX_DEPTH)), "workload file"), dict)


def test_a_billion_laughs_document_is_refused_before_it_is_built(tmp_path):
    path = write(tmp_path, laughs(9))
    with pytest.raises(UsageError, match=r"aliases expand to more than 1,000,000 nodes .*alias bomb"):
        read_yaml_file(path, "stack file")


@given(levels=st.integers(min_value=1, max_value=6), fan_out=st.integers(min_value=1, max_value=6))
def test_the_expansion_bound_counts_each_alias_as_what_it_repeats(levels, fan_out):
    text = laughs(levels, fan_out)

    def count(value) -> int:
        if isinstance(value, dict):
            return 1 + sum(1 + count(v) for v in value.values())
        if isinstance(value, list):
            return 1 + sum(count(v) for v in value)
        return 1

    total = count(yaml.load(text, Loader=yaml.SafeLoader))  # the walk over the loaded document is the reference
    yaml_files.check_yaml_bounds(text, max_nodes=total)
    with pytest.raises(yaml_files.YamlBoundsError, match="aliases expand"):
        yaml_files.check_yaml_bounds(text, max_nodes=total - 1)


def test_an_alias_that_nests_past_the_depth_bound_is_refused():
    deep = "deep: &d " + "[" * 100 + "]" * 100 + "\n"
    with pytest.raises(yaml_files.YamlBoundsError, match=r"alias \*d at line 2 nests the document more than"):
        yaml_files.check_yaml_bounds(deep + "again: " + "[" * 30 + "*d" + "]" * 30 + "\n")


def test_a_yaml_file_over_the_size_bound_is_refused_naming_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(yaml_files, "MAX_BYTES", 1_000)
    path = write(tmp_path, "name: w\n" + "# padding\n" * 200)
    with pytest.raises(UsageError, match=rf"{path}: 2,008 bytes; accel reads a .* of at most 1,000 bytes"):
        read_yaml_file(path, "workload file")


@pytest.mark.parametrize("file", sorted((yaml_files.Path(__file__).parent.parent / "stacks").glob("*.yaml"))
                         + sorted((yaml_files.Path(__file__).parent.parent / "policies" / "catalog").glob("*.yaml")))
def test_every_shipped_yaml_file_is_within_the_bounds(file):
    yaml_files.check_yaml_bounds(file.read_text())
