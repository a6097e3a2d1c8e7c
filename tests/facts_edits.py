"""The bundled hardware table with one edit, loaded: how the tests show the loader refusing a fact it must not
take (policies/hardware/facts.toml)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from accel.policies import hardware
from accel.policies.hardware import HardwareFacts, load_facts

TABLE = Path(hardware.__file__).with_name("facts.toml")


def load_edited(tmp_path: Path, anchor: str, edit: Callable[[str], str]) -> HardwareFacts:
    """load_facts of the bundled table with `edit` applied; `anchor`, the entry the edit works on, must still be
    there, so an edit that no longer matches fails loudly instead of loading the table unchanged."""
    text = TABLE.read_text(encoding="utf-8")
    assert anchor in text, f"{anchor.splitlines()[0]} moved: update this test's edit"
    path = tmp_path / "facts.toml"
    path.write_text(edit(text), encoding="utf-8")
    return load_facts(path)
