"""Every input of a value kept in the derived-data cache is in its key: an edit of the bundled hardware facts
table (facts.toml) that changes a fitted value is fitted again, not read back stale (accel.base.derived_cache)."""

from __future__ import annotations

import shutil

from accel.base import derived_cache
from accel.policies import hardware
from accel.policies.catalog import load_catalog
from accel.policies.estimator import whole_run_model


def _fresh_model(monkeypatch, catalog) -> whole_run_model.WholeRunModel:
    """The whole-run model as a new process would get it: no in-memory table or fit, the disk cache as it is."""
    monkeypatch.setattr(hardware, "_BUNDLED", None)
    monkeypatch.setattr(whole_run_model, "_MODELS", {})
    return whole_run_model.calibrated_model(catalog)


def test_an_edit_of_the_bundled_collective_fabrics_refits_the_whole_run_model(tmp_path, monkeypatch):
    # The MoE rows' all-to-all reads [collective_fabrics] (DeepSeek-V3's H800 NVLink): the fit depends on them.
    catalog = load_catalog()
    facts = tmp_path / "facts.toml"
    shutil.copyfile(hardware.BUNDLED_FACTS, facts)
    monkeypatch.setattr(hardware, "BUNDLED_FACTS", facts)
    monkeypatch.setenv(derived_cache.CACHE_DIR_VARIABLE, str(tmp_path / "cache"))
    monkeypatch.setattr(derived_cache, "_fingerprints", {})
    before = _fresh_model(monkeypatch, catalog)

    text = facts.read_text()
    slow = text.replace("[collective_fabrics.h800]\ndomain_chips = 8\nscale_up_gbytes_per_s = 160",
                        "[collective_fabrics.h800]\ndomain_chips = 8\nscale_up_gbytes_per_s = 4")
    assert slow != text
    facts.write_text(slow)
    cached_after_edit = _fresh_model(monkeypatch, catalog)
    monkeypatch.setenv(derived_cache.CACHE_DIR_VARIABLE, "off")
    fitted_afresh = _fresh_model(monkeypatch, catalog)

    assert fitted_afresh.moe_factor != before.moe_factor   # the edit matters to the fit
    assert cached_after_edit.moe_factor == fitted_afresh.moe_factor
