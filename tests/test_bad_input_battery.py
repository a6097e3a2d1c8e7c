"""A battery of bad inputs, run in-process: every one exits 2 (or the documented code) with a message
naming what is wrong, never a traceback, never a hang, never an unbounded read (issue #31).

What it covers, each a family of cases (`pytest --collect-only -q tests/test_bad_input_battery.py`
counts them; the issue asks for at least 400):
- every file a command reads, as each kind of path that is not a readable regular file: a symlink
  to /dev/zero or /dev/urandom, a FIFO with no writer, a socket, a directory, a symlink loop, a
  name too long, a path through a file, a missing file, a sparse file past the size bound, bytes
  that are not UTF-8;
- every file a command writes, as a missing folder, a directory, a FIFO, a path through a file,
  a name too long;
- options that become durations, counts or sizes, at and past their bounds (inf, nan, 1e309,
  ten-year TTLs, huge attempts);
- `accel job --image`: references the OCI grammar refuses (empty, spaces, shell text, newlines,
  upper-case paths, 5,000 characters);
- preview / plan / event-log documents carrying hostile values (a 5,000-digit integer, deep
  nesting, NaN, wrong shapes);
- text from a pull request rendered into the review comment: no live mention, no autolink, no
  invisible or reordering character, no broken Mermaid label;
- the reaper's data classification over storage types and unknown types (deny by default).

A FIFO is opened with O_NONBLOCK by accel (accel/base/safe_files.py), so a regression would hang:
each CLI case runs under a SIGALRM watchdog that fails it after 10 s instead.
"""

from __future__ import annotations

import copy
import json
import os
import re
import signal
import socket
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from accel.base.errors import UsageError
from accel.base.image_reference import check_image_reference
from accel.base.safe_files import read_text
from accel.base.units import MAX_TTL, UnitError, parse_ttl
from accel.cli import _register_commands, app
from accel.policies.data_classes import classify, holds_data
from accel.review.markdown_text import code, text
from accel.review.mermaid import label_text

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "llama-8b-serving.yaml"
REVIEW = ROOT / "tests" / "fixtures" / "review"
PREVIEW = REVIEW / "preview_create.json"
DELETE = REVIEW / "preview_delete_checkpoint_bucket.json"
PLAN = REVIEW / "plan_head.json"
EVENTS = REVIEW / "preview_events.jsonl"
WATCHDOG_SECONDS = 10


class Hung(Exception):
    pass


def _alarm(_signum, _frame):
    raise Hung(f"no answer within {WATCHDOG_SECONDS} s (a blocking open or an endless read?)")


def run(*args: str):
    """The command in-process; a hang fails the case instead of the suite."""
    _register_commands()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(WATCHDOG_SECONDS)
    try:
        return CliRunner().invoke(app, [str(a) for a in args])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def assert_refused(result, *needles: str, code: int = 2) -> None:
    """Exit `code`, an `error:` line naming each needle, and no traceback or stray exception."""
    assert not isinstance(result.exception, Hung), result.exception
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output and "Traceback" not in result.stderr
    assert result.exit_code == code, (result.exit_code, result.stderr[-500:])
    assert "error" in result.stderr.lower(), result.stderr
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr[-500:])


# ---------------------------------------------------------------- paths that are not readable regular files

@pytest.fixture(scope="module")
def bad_paths(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    """{kind: (path, what the message must say)}."""
    base = tmp_path_factory.mktemp("bad")
    (base / "zero").symlink_to("/dev/zero")
    (base / "urandom").symlink_to("/dev/urandom")
    os.mkfifo(base / "fifo")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(base / "sock"))
    (base / "dir").mkdir()
    (base / "loop-a").symlink_to(base / "loop-b")
    (base / "loop-b").symlink_to(base / "loop-a")
    (base / "file").write_text("name: x\n")
    (base / "binary").write_bytes(b"\xff\xfe\x00garbage\x80\x81")
    with open(base / "huge", "wb") as handle:  # sparse: no disk used, 300 MB by its size
        handle.truncate(300 * 1024 * 1024)
    return {
        "dev-zero": (base / "zero", "character device"),
        "dev-urandom": (base / "urandom", "character device"),
        "fifo": (base / "fifo", "FIFO"),
        "socket": (base / "sock", "not a regular file"),
        "directory": (base / "dir", "directory"),
        "symlink-loop": (base / "loop-a", "symbolic links"),
        "name-too-long": (base / ("n" * 300 + ".yaml"), "name too long"),
        "through-a-file": (base / "file" / "x.yaml", "not a folder"),
        "missing": (base / "absent.yaml", "no such"),
        "over-the-bound": (base / "huge", "bytes"),
        "not-utf8": (base / "binary", ""),
    }


KINDS = ["dev-zero", "dev-urandom", "fifo", "socket", "directory", "symlink-loop", "name-too-long", "through-a-file",
         "missing", "over-the-bound", "not-utf8"]
READERS = {
    "choose WORKLOAD": lambda p: ("choose", p),
    "choose --reservations": lambda p: ("choose", EXAMPLE, "--reservations", p),
    "choose --catalog": lambda p: ("choose", EXAMPLE, "--catalog", p),
    "plan --config": lambda p: ("plan", "--config", p, "-C", ROOT),
    "job --check": lambda p: ("job", "--check", p, "-C", ROOT),
    "review PREVIEW": lambda p: ("review", p),
    "review --plan": lambda p: ("review", PREVIEW, "--plan", p),
    "review --base-plan": lambda p: ("review", PREVIEW, "--base-plan", p),
    "review --event-log": lambda p: ("review", PREVIEW, "--event-log", p),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reader", list(READERS))
def test_a_path_that_is_not_a_readable_regular_file_exits_2_naming_it(bad_paths, reader, kind):
    if reader == "choose --catalog" and kind == "directory":
        pytest.skip("--catalog takes a directory of overlays by design")
    path, says = bad_paths[kind]
    result = run(*READERS[reader](path))
    shown = str(path)[:60]
    assert_refused(result, shown, says)


@pytest.mark.parametrize("kind", KINDS)
def test_the_shared_reader_refuses_each_kind_without_reading_it(bad_paths, kind):
    path, says = bad_paths[kind]
    with pytest.raises(UsageError, match=re.escape(says) if says else None):
        read_text(path, "test file", max_bytes=1024 * 1024)


# ---------------------------------------------------------------- paths a command writes to

@pytest.fixture(scope="module")
def bad_outputs(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("out")
    (base / "dir").mkdir()
    (base / "file").write_text("x")
    os.mkfifo(base / "fifo")
    return {"missing-folder": base / "no" / "such" / "out.yaml", "directory": base / "dir",
            "fifo": base / "fifo", "through-a-file": base / "file" / "out.yaml",
            "name-too-long": base / ("o" * 300 + ".yaml")}


WRITERS = {
    "job -o": lambda p: ("job", "-s", "llama-70b-tpu", "-C", ROOT, "-o", p),
    "review -o": lambda p: ("review", PREVIEW, "-o", p),
    "choose --plot": lambda p: ("choose", EXAMPLE, "--plot", str(p) + ".png" if p.name.endswith("yaml") else p),
}


@pytest.mark.parametrize("kind", ["missing-folder", "directory", "fifo", "through-a-file", "name-too-long"])
@pytest.mark.parametrize("writer", list(WRITERS))
def test_an_output_path_that_cannot_be_written_exits_2_naming_it(bad_outputs, writer, kind):
    if writer == "choose --plot" and kind in ("directory", "fifo"):
        pytest.skip("--plot names a .png or .svg file; a bare directory or FIFO is refused by its suffix check")
    result = run(*WRITERS[writer](bad_outputs[kind]))
    assert_refused(result)
    assert str(bad_outputs[kind])[:40] in result.stderr or "--plot" in result.stderr


# ---------------------------------------------------------------- options that become durations and counts

REAP_OPTIONS = [
    ("--retry-delay", "inf"), ("--retry-delay", "nan"), ("--retry-delay", "-1"), ("--retry-delay", "1e309"),
    ("--retry-delay", "3601"), ("--retry-delay", "99999999999"), ("--retry-delay", "x"), ("--retry-delay", ""),
    ("--attempts", "0"), ("--attempts", "-3"), ("--attempts", "101"), ("--attempts", "1e9"), ("--attempts", "x"),
    ("--attempts", "99999999999999999999999"), ("--busy-limit", "999999999w"), ("--busy-limit", "99999999999w"),
    ("--busy-limit", "0s"), ("--busy-limit", "0m"), ("--busy-limit", "abc"), ("--busy-limit", ""),
    ("--busy-limit", "1h2h"), ("--busy-limit", "12"), ("--busy-limit", "-5h"), ("--busy-limit", "1m1w"),
    ("--busy-limit", "9" * 5000 + "m"), ("--busy-limit", "3661d"), ("--now", "tomorrow"), ("--now", "2026-13-01T00:00:00Z"),
    ("--now", "2026-03-01"), ("--now", "2026-03-01T00:00:00"), ("--now", ""), ("--now", "10000-01-01T00:00:00Z"),
]


@pytest.mark.parametrize("option,value", REAP_OPTIONS)
def test_reap_refuses_an_option_value_past_its_bound(tmp_path, option, value):
    (tmp_path / "Pulumi.yaml").write_text("name: accel\nruntime: python\n")
    result = run("reap", "--dry-run", "--work-dir", tmp_path, option, value)
    assert_refused(result)


@pytest.mark.parametrize("option,value", [o for o in REAP_OPTIONS if o[0] in ("--retry-delay", "--attempts")])
def test_destroy_after_run_refuses_the_same_values(tmp_path, option, value):
    result = run("destroy-after-run", "-s", "x", "--work-dir", tmp_path, option, value, "--", "true")
    assert_refused(result)


@pytest.mark.parametrize("value", ["0", "-1", "x", "1e99", "nan", "", "99999999999999999999999"])
def test_review_refuses_a_bad_max_chars(value):
    assert_refused(run("review", PREVIEW, "--max-chars", value))


@given(st.text(max_size=40))
@settings(max_examples=300, deadline=None)
def test_any_ttl_text_is_a_bounded_duration_or_a_unit_error(value):
    try:
        span = parse_ttl(value)
    except UnitError:
        return
    assert span.total_seconds() > 0 and span <= MAX_TTL


@given(st.integers(min_value=0, max_value=10**30), st.sampled_from("mhdw"))
@settings(max_examples=200, deadline=None)
def test_a_ttl_of_any_size_is_bounded_never_an_overflow(amount, unit):
    try:
        span = parse_ttl(f"{amount}{unit}")
    except UnitError:
        return
    assert span <= MAX_TTL


# ---------------------------------------------------------------- accel job --image and --stack

BAD_IMAGES = [
    "", " ", "my image:latest", "$(id)", "`id`", "x:1\n  privileged: true", "a" * 5000, "UPPER/Repo:tag",
    "repo:", "repo@", "repo@sha256:abc", "repo:tag with space", "-leading/dash", "repo//double", "repo/trailing/",
    "repo:" + "t" * 129, "repo;rm -rf /", "repo|cat", "repo&&x", "http://registry/repo", "repo:tag:tag",
    "registry:port/repo:tag:x", "..", "repo\tname", "rep\x00o", "ré/po", "repo:tag\u202e",
]


@pytest.mark.parametrize("image", BAD_IMAGES)
def test_a_bad_image_reference_is_refused_by_the_grammar(image):
    with pytest.raises(UsageError, match="--image"):
        check_image_reference(image)


@pytest.mark.parametrize("image", BAD_IMAGES[:12])
def test_job_refuses_a_bad_image_before_planning(image):
    if "\x00" in image:
        pytest.skip("a NUL cannot be an argument")
    assert_refused(run("job", "-s", "llama-70b-tpu", "-C", ROOT, "--image", image), "--image")


GOOD_IMAGES = ["nvcr.io/nvidia/pytorch:25.01-py3", "vllm/vllm-openai:v0.8.5", "python:3.11", "localhost:5000/a/b:1",
               "us-docker.pkg.dev/p/r/i@sha256:" + "a" * 64, "ghcr.io/nvidia/jax:maxtext", "a", "a_b__c-d.e/f---g"]


@pytest.mark.parametrize("image", GOOD_IMAGES)
def test_a_valid_image_reference_is_accepted(image):
    assert check_image_reference(image) == image


@pytest.mark.parametrize("stack", ["", " ", "   "])
def test_job_refuses_an_empty_stack_name(stack):
    assert_refused(run("job", "-s", stack, "-C", ROOT), "--stack")


# ---------------------------------------------------------------- hostile preview / plan / event-log documents

def _preview() -> dict:
    return json.loads(PREVIEW.read_text(encoding="utf-8"))


def _text_with(value_json: str) -> str:
    body = json.dumps(_preview())
    return body[:-1] + ', "x": ' + value_json + "}"


HOSTILE_JSON = {
    "5000-digit integer": _text_with("9" * 5000),
    "5000-digit negative": _text_with("-" + "9" * 5000),
    "deep arrays": _text_with("[" * 5000 + "]" * 5000),
    "deep objects": _text_with('{"a":' * 3000 + "1" + "}" * 3000),
    "NaN literal": _text_with("NaN"),
    "Infinity literal": _text_with("Infinity"),
    "truncated": json.dumps(_preview())[:-40],
    "empty": "",
    "whitespace": "   \n",
    "a list": "[1, 2, 3]",
    "a string": '"steps"',
    "null": "null",
    "steps not a list": json.dumps({"steps": "x"}),
    "step not an object": json.dumps({"steps": [1]}),
    "bad urn": json.dumps({"steps": [{"op": "create", "urn": "nope", "newState": {"type": "x"}}]}),
    "op not a string": json.dumps({"steps": [{"op": 5, "urn": "urn:pulumi:s::p::t::n"}]}),
    "trailing garbage": json.dumps(_preview()) + "}",
    "two documents": json.dumps(_preview()) + json.dumps(_preview()),
    "BOM": "\ufeff" + json.dumps(_preview()),
}


# NaN / Infinity in an extra top-level key: Python's parser takes them, and no field reads that key.
IGNORED_EXTRA_KEY = ("NaN literal", "Infinity literal")


@pytest.mark.parametrize("case", list(HOSTILE_JSON))
@pytest.mark.parametrize("slot", ["preview", "--plan", "--base-plan"])
def test_a_hostile_json_document_is_refused_with_a_message(tmp_path, case, slot):
    path = tmp_path / "doc.json"
    path.write_text(HOSTILE_JSON[case], encoding="utf-8")
    args = ("review", path) if slot == "preview" else ("review", PREVIEW, slot, path)
    result = run(*args)
    if result.exit_code == 0 and case in IGNORED_EXTRA_KEY:
        return  # the hostile value sits in a key the reader ignores, and nothing reads it
    assert_refused(result, str(path))


HOSTILE_EVENT_LINES = ["9" * 5000, "{" * 2000 + "}" * 2000, "NaN", "[]", '"x"', "{", '{"policyEvent": 5}',
                       '{"policyEvent": {"enforcementLevel": "mandatory"}}', "\x00", '{"sequence": ' + "9" * 5000 + "}"]


@pytest.mark.parametrize("line", HOSTILE_EVENT_LINES)
def test_a_hostile_event_log_line_is_refused_naming_its_line(tmp_path, line):
    path = tmp_path / "events.jsonl"
    path.write_text(EVENTS.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
    result = run("review", PREVIEW, "--event-log", path)
    assert_refused(result, str(path))


# ---------------------------------------------------------------- pull-request text in the review comment

PAYLOADS = [
    "@acme/security-team", "@octocat please approve", "ping @everyone", "mail me@evil.example",
    "see https://evil.example/login", "http://x.example", "www.evil.example", "HTTPS://EVIL.EXAMPLE",
    "ftp://files.example", "mailto:a@b.example", "sgol\u202ekcehc", "a\u200bb", "zero\u200cwidth\u200d",
    "\ufeffbom", "\u2066isolate\u2069", "\x1b[31mred\x1b[0m", "bell\x07", "line\nbreak", "cr\rlf",
    "para\u2029sep", "line\u2028sep", "</details><img src=x onerror=alert(1)>", "<!-- accel-review stack=prod -->",
    "[click](https://evil.example)", "![img](https://evil.example/x.png)", "# heading", "> [!CAUTION] fake",
    "`code` $math$ |cell|", "**bold** _it_ ~~s~~", "\u0000nul",
]
INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\x00-\x08\x0b-\x1f\x7f\u2028\u2029]")


def _inert(markdown: str) -> None:
    visible = markdown.replace("&#8203;", "")
    assert not re.search(r"(?<![\w`])@(?!&#8203;)\w", markdown), markdown  # no live mention
    assert not re.search(r"(?i)\b(https?|ftp|mailto):", markdown), markdown  # no autolinked scheme
    assert not re.search(r"(?i)\bwww\.", markdown), markdown
    assert not INVISIBLE.search(markdown), ascii(markdown)
    assert "<" not in visible and "\n" not in visible


@pytest.mark.parametrize("payload", PAYLOADS)
def test_text_renders_a_payload_inert_and_visible(payload):
    _inert(text(payload))


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_code_span_shows_no_invisible_character(payload):
    rendered = code(payload)
    assert not INVISIBLE.search(rendered) and "\n" not in rendered


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_mermaid_label_stays_one_quoted_line(payload):
    label = label_text(payload)
    assert "\n" not in label and "\r" not in label and '"' not in label and not INVISIBLE.search(label)


@pytest.mark.parametrize("payload", PAYLOADS[:20])
def test_a_deleted_bucket_named_with_a_payload_is_shown_inert(tmp_path, payload):
    document = json.loads(DELETE.read_text(encoding="utf-8"))
    body = json.dumps(document).replace("llama-checkpoints", json.dumps(payload)[1:-1])
    path = tmp_path / "p.json"
    path.write_text(body, encoding="utf-8")
    result = run("review", path)
    assert result.exit_code == 0, result.stderr[-300:]
    comment = result.stdout
    assert not re.search(r"(?<![\w`&#;])@(?!&#8203;)[A-Za-z]", comment.replace("```", "")), comment[:500]
    assert not INVISIBLE.search(comment), ascii(comment[:300])


@given(st.text(max_size=60))
@settings(max_examples=150, deadline=None)
def test_any_text_is_rendered_without_a_raw_control_or_format_character(value):
    rendered = text(value)
    assert all(unicodedata.category(ch) not in ("Cc", "Cf", "Zl", "Zp") for ch in rendered)
    assert "<" not in rendered.replace("&lt;", "")


# ---------------------------------------------------------------- what may hold data (deny by default)

STORAGE = [
    "gcp:storage/bucket:Bucket", "gcp:compute/disk:Disk", "gcp:compute/regionDisk:RegionDisk",
    "gcp:compute/snapshot:Snapshot", "gcp:compute/image:Image", "gcp:filestore/instance:Instance",
    "gcp:lustre/instance:Instance", "gcp:parallelstore/instance:Instance", "gcp:netapp/volume:Volume",
    "gcp:bigquery/dataset:Dataset", "gcp:bigquery/table:Table", "gcp:sql/databaseInstance:DatabaseInstance",
    "gcp:alloydb/cluster:Cluster", "gcp:spanner/instance:Instance", "gcp:bigtable/instance:Instance",
    "gcp:redis/instance:Instance", "gcp:artifactregistry/repository:Repository", "aws:s3/bucket:Bucket",
    "aws:s3/bucketV2:BucketV2", "aws:s3/bucketObjectv2:BucketObjectv2", "aws:ebs/volume:Volume",
    "aws:ebs/snapshot:Snapshot", "aws:ec2/volume:Volume", "aws:efs/fileSystem:FileSystem",
    "aws:fsx/lustreFileSystem:LustreFileSystem", "aws:fsx/openZfsFileSystem:OpenZfsFileSystem",
    "aws:fsx/ontapFileSystem:OntapFileSystem", "aws:fsx/ontapVolume:OntapVolume", "aws:rds/instance:Instance",
    "aws:rds/cluster:Cluster", "aws:dynamodb/table:Table", "aws:ecr/repository:Repository",
    "aws:elasticache/cluster:Cluster", "aws:redshift/cluster:Cluster", "aws-native:s3:Bucket",
    "google-native:storage/v1:Bucket", "kubernetes:core/v1:PersistentVolumeClaim", "kubernetes:core/v1:PersistentVolume",
]
UNKNOWN = ["mycorp:index:Thing", "azure:storage/account:Account", "gcp:newservice/store:Store",
           "kubernetes:helm.sh/v3:Release", "kubernetes:example.com/v1:Database", "docker:index/volume:Volume"]


@pytest.mark.parametrize("resource_type", STORAGE)
def test_a_storage_type_holds_data(resource_type):
    assert classify(resource_type)[0] == "data" and holds_data(resource_type)


@pytest.mark.parametrize("resource_type", UNKNOWN)
def test_an_unknown_type_is_treated_as_holding_data(resource_type):
    kind, why = classify(resource_type, {"chart": "postgresql"})
    assert kind in ("unknown", "data") and holds_data(resource_type, {"chart": "postgresql"}) and why


# ---------------------------------------------------------------- bad workload files (refused before any search)

def _workload_with(tmp_path: Path, old: str, new: str) -> Path:
    body = EXAMPLE.read_text(encoding="utf-8")
    assert old in body
    path = tmp_path / "w.yaml"
    path.write_text(body.replace(old, new), encoding="utf-8")
    return path


WORKLOAD_EDITS = [
    ("parameters: 8B", f"parameters: {bad}") for bad in ("-8B", "0", "abc", "[]", "{}", ".nan", ".inf", "1e400",
                                                         "true", "8 BB", "'9" + "9" * 400 + "'")
] + [
    ("tokens_per_second: 4000", f"tokens_per_second: {bad}") for bad in ("-1", "0", ".nan", ".inf", "abc", "[1]",
                                                                          "1e999")
] + [
    ("p99_latency_ms: 80", f"p99_latency_ms: {bad}") for bad in ("-80", "0", ".nan", "x", "{a: 1}")
] + [
    ("kind: inference", f"kind: {bad}") for bad in ("infer", "1", "''", "[inference]", "training training")
] + [
    ("clouds: [gcp, aws]", f"clouds: {bad}") for bad in ("[azure]", "[]", "gcp", "[gcp, azure]", "[1]")
] + [
    ("spot: allowed", f"spot: {bad}") for bad in ("maybe", "1", "[allowed]")
] + [
    ("name: llama-8b-serving", "name: llama-8b-serving\nname: twice"),
    ("name: llama-8b-serving", "name: llama-8b-serving\nunknown_key: 1"),
    ("name: llama-8b-serving", "name: !!python/object/apply:os.system ['id']"),
    ("model:", "model: &a [*a]\nx:"),
]


@pytest.mark.parametrize("old,new", WORKLOAD_EDITS, ids=[f"{i}:{n[:30]}" for i, (_o, n) in enumerate(WORKLOAD_EDITS)])
def test_a_workload_with_a_bad_field_is_refused_naming_the_file(tmp_path, old, new):
    path = _workload_with(tmp_path, old, new)
    assert_refused(run("choose", path), str(path))
