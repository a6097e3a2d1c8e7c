"""Stack configuration as the Pulumi CLI would pass it: merged, namespaced, strings, secrets hidden."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from accel.base.errors import UsageError
from accel.stack.config import (
    SECRET_PLACEHOLDER,
    check_stack_name,
    encode_value,
    load_stack_config,
    stack_name_from_path,
)

PROJECT_YAML = """\
name: accel
runtime: {name: python}
stackConfigDir: stacks
config:
  accel:owner:
    type: string
    default: unknown
  retries:
    type: integer
    default: 3
  regions:
    type: array
    items: {type: string}
    default: [us-central1]
  gcp:region: us-central1
"""


def project(tmp_path: Path, stack_yaml: str, project_yaml: str = PROJECT_YAML, stack: str = "dev") -> Path:
    (tmp_path / "stacks").mkdir(exist_ok=True)
    (tmp_path / "Pulumi.yaml").write_text(project_yaml)
    (tmp_path / "stacks" / f"Pulumi.{stack}.yaml").write_text(stack_yaml)
    return tmp_path


def values(tmp_path: Path, stack_yaml: str, **kwargs) -> dict[str, str]:
    return load_stack_config(project(tmp_path, stack_yaml, **kwargs), "dev").values


# ---- merging and encoding ----------------------------------------------------------------------

def test_project_defaults_apply_when_the_stack_is_silent(tmp_path):
    assert values(tmp_path, "config: {}\n") == {
        "accel:owner": "unknown", "accel:retries": "3", "accel:regions": '["us-central1"]',
        "gcp:region": "us-central1",
    }


def test_bare_project_keys_are_namespaced_with_the_project_name(tmp_path):
    assert "accel:retries" in values(tmp_path, "config: {}\n")


def test_the_stack_file_overrides_project_defaults(tmp_path):
    merged = values(tmp_path, "config:\n  accel:owner: ml-platform\n  gcp:region: us-east5\n")
    assert merged["accel:owner"] == "ml-platform"
    assert merged["gcp:region"] == "us-east5"


def test_objects_are_json_encoded(tmp_path):
    merged = values(tmp_path, "config:\n  accel:workload:\n    name: llama\n    model: {parameters: 70B}\n")
    assert json.loads(merged["accel:workload"]) == {"name": "llama", "model": {"parameters": "70B"}}


def test_booleans_and_numbers_become_the_strings_the_cli_passes(tmp_path):
    merged = values(tmp_path, "config:\n  accel:spot: true\n  accel:retries: 5\n  accel:fraction: 0.5\n")
    assert (merged["accel:spot"], merged["accel:retries"], merged["accel:fraction"]) == ("true", "5", "0.5")


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
                    max_leaves=8).filter(lambda v: isinstance(v, (list, dict))))
def test_structured_values_round_trip_through_json(value):
    assert json.loads(encode_value(value)) == value


def test_a_stack_file_without_config_yields_only_defaults(tmp_path):
    assert values(tmp_path, "")["accel:owner"] == "unknown"


def test_stack_config_dir_is_honoured(tmp_path):
    (tmp_path / "Pulumi.yaml").write_text("name: accel\nruntime: python\nstackConfigDir: conf\n")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "Pulumi.prod.yaml").write_text("config:\n  accel:owner: prod-team\n")
    assert load_stack_config(tmp_path, "prod").values == {"accel:owner": "prod-team"}


def test_a_config_path_names_the_stack(tmp_path):
    root = project(tmp_path, "config: {}\n")
    other = tmp_path / "Pulumi.gpu-h100.yaml"
    other.write_text("config:\n  accel:owner: gpu-team\n")
    loaded = load_stack_config(root, None, other)
    assert loaded.stack == "gpu-h100"
    assert loaded.values["accel:owner"] == "gpu-team"


@pytest.mark.parametrize("path, stack", [("stacks/Pulumi.llama-70b-tpu.yaml", "llama-70b-tpu"),
                                         ("Pulumi.dev.yml", "dev"), ("custom.yaml", "custom")])
def test_stack_name_from_path(path, stack):
    assert stack_name_from_path(Path(path)) == stack


# ---- secrets ---------------------------------------------------------------------------------------

def test_secure_values_become_placeholders_and_secret_keys(tmp_path):
    loaded = load_stack_config(project(tmp_path, "config:\n  accel:token:\n    secure: AAABAHx1\n"), "dev")
    assert loaded.values["accel:token"] == SECRET_PLACEHOLDER
    assert loaded.secret_keys == ("accel:token",)


def test_a_secret_nested_in_an_object_hides_only_that_leaf(tmp_path):
    stack_yaml = "config:\n  accel:db:\n    user: trainer\n    password: {secure: AAABAHx1}\n"
    loaded = load_stack_config(project(tmp_path, stack_yaml), "dev")
    assert json.loads(loaded.values["accel:db"]) == {"user": "trainer", "password": SECRET_PLACEHOLDER}
    assert "accel:db" in loaded.secret_keys


def test_no_ciphertext_reaches_the_program(tmp_path):
    loaded = load_stack_config(project(tmp_path, "config:\n  accel:token: {secure: v1:CIPHERTEXT}\n"), "dev")
    assert "CIPHERTEXT" not in json.dumps(loaded.values)


# ---- errors name the file, the key and the reason -------------------------------------------------

def test_a_missing_stack_file_is_named(tmp_path):
    root = project(tmp_path, "config: {}\n")
    with pytest.raises(UsageError, match=r"stacks/Pulumi\.nope\.yaml: file not found"):
        load_stack_config(root, "nope")


def test_a_mistyped_stack_name_suggests_the_closest_stack_and_lists_them_all(tmp_path, monkeypatch):
    root = project(tmp_path, "config: {}\n", stack="llama-70b-tpu")
    monkeypatch.chdir(root)  # paths in messages are relative to the working directory
    (root / "stacks" / "Pulumi.llama-8b-v5p.yaml").write_text("config: {}\n")
    with pytest.raises(UsageError) as caught:
        load_stack_config(root, "llama-70b-tpuu")
    assert str(caught.value).splitlines() == [
        "stacks/Pulumi.llama-70b-tpuu.yaml: file not found: no stack 'llama-70b-tpuu' in this project; "
        "did you mean 'llama-70b-tpu'?",
        "available stacks: llama-70b-tpu, llama-8b-v5p",
    ]


def test_a_missing_stack_with_nothing_close_still_lists_the_stacks(tmp_path):
    root = project(tmp_path, "config: {}\n", stack="prod")
    with pytest.raises(UsageError, match=r"no stack 'zzz' in this project\navailable stacks: prod$"):
        load_stack_config(root, "zzz")


def test_a_project_without_stack_files_says_where_it_looked(tmp_path, monkeypatch):
    (tmp_path / "Pulumi.yaml").write_text(PROJECT_YAML)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match=r"no stack files \(Pulumi\.<stack>\.yaml\) in stacks$"):
        load_stack_config(tmp_path, "dev")


@pytest.mark.parametrize("stack", ["../dev", "stacks/dev", "a\\b", "dev/../../etc/passwd", "..", ".", "a..b",
                                   "dev stack", "dév", ""])
def test_a_stack_name_that_could_leave_the_stack_directory_is_rejected(tmp_path, stack):
    root = project(tmp_path, "config: {}\n")
    (tmp_path / "Pulumi.dev.yaml").write_text("config: {}\n")  # what "../dev" would reach
    with pytest.raises(UsageError, match=rf"^-s/--stack: {re.escape(repr(stack))} is not a stack name: a stack "
                                         r"name is 1 to 100 letters, digits, '-', '_' or '\.'"):
        check_stack_name(stack)
    if stack:  # an empty -s is "no stack given"
        with pytest.raises(UsageError, match="is not a stack name"):
            load_stack_config(root, stack)


def test_a_qualified_stack_name_is_told_to_give_only_the_stack_part():
    with pytest.raises(UsageError, match=r"give only the stack: -s llama-70b-tpu\)$"):
        check_stack_name("acme/accel/llama-70b-tpu")


@given(st.from_regex(r"[A-Za-z0-9_.-]{1,100}", fullmatch=True).filter(lambda s: ".." not in s and s != "."))
def test_every_name_the_pulumi_cli_takes_is_accepted(stack):
    assert check_stack_name(stack) == stack


def test_a_config_path_that_is_a_directory_says_so(tmp_path, monkeypatch):
    root = project(tmp_path, "config: {}\n")
    monkeypatch.chdir(root)
    with pytest.raises(UsageError, match=r"stacks: is a directory; --config takes a stack file such as "
                                         r"stacks/Pulumi\.<stack>\.yaml"):
        load_stack_config(root, None, root / "stacks")


def test_a_yaml_syntax_error_gives_file_and_line(tmp_path):
    root = project(tmp_path, "config:\n  accel:owner: a\n   bad: indentation\n")
    with pytest.raises(UsageError, match=r"Pulumi\.dev\.yaml: not valid YAML at line 3, column \d+"):
        load_stack_config(root, "dev")


def test_a_mistyped_namespace_suggests_the_project(tmp_path):
    root = project(tmp_path, "config:\n  acel:workload: {}\n")
    with pytest.raises(UsageError, match=r"Pulumi\.dev\.yaml: acel:workload: unknown namespace 'acel'; "
                                         r"did you mean 'accel:workload'\?"):
        load_stack_config(root, "dev")


def test_a_bare_key_in_a_stack_file_asks_for_the_namespace(tmp_path):
    root = project(tmp_path, "config:\n  workload: {}\n")
    with pytest.raises(UsageError, match=r"workload: stack file keys are namespaced; write 'accel:workload'"):
        load_stack_config(root, "dev")


def test_provider_namespaces_are_accepted(tmp_path):
    merged = values(tmp_path, "config:\n  gcp:project: p\n  aws:region: us-east-1\n  kubernetes:context: c\n")
    assert (merged["gcp:project"], merged["aws:region"], merged["kubernetes:context"]) == ("p", "us-east-1", "c")


def test_an_unknown_top_level_key_suggests_config(tmp_path):
    root = project(tmp_path, "configs:\n  accel:owner: x\n")
    with pytest.raises(UsageError, match=r"Pulumi\.dev\.yaml: configs: unknown top-level key; did you mean 'config'"):
        load_stack_config(root, "dev")


def test_a_value_of_the_wrong_declared_type_is_rejected(tmp_path):
    root = project(tmp_path, "config:\n  accel:retries: many\n")
    with pytest.raises(UsageError, match=r"accel:retries: 'many' is not of type integer"):
        load_stack_config(root, "dev")


def test_a_declared_key_without_default_must_be_set(tmp_path):
    project_yaml = "name: accel\nruntime: python\nstackConfigDir: stacks\nconfig:\n  budget:\n    type: integer\n"
    root = project(tmp_path, "config: {}\n", project_yaml=project_yaml)
    with pytest.raises(UsageError,
                       match=r"Pulumi\.dev\.yaml: accel:budget: required by .*Pulumi\.yaml \(no default\) but not set"):
        load_stack_config(root, "dev")


def test_a_project_without_a_name_is_rejected(tmp_path):
    root = project(tmp_path, "config: {}\n", project_yaml="runtime: python\n")
    with pytest.raises(UsageError, match=r"Pulumi\.yaml: name: missing"):
        load_stack_config(root, "dev")
