"""README's set-up installs accel editable: the library is read from this checkout, and no copy of
`policies/` or `components/` lies in site-packages for an editor's go-to-definition to land in."""

import sysconfig
from pathlib import Path

import pytest

import accel

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def editable_install():
    if Path(accel.__file__).resolve().parent != ROOT / "accel":
        pytest.skip("accel is not installed from this checkout")


def test_accel_policies_and_components_are_the_checkouts_folders(editable_install):
    import accel.components
    import accel.policies

    assert Path(accel.policies.__file__).resolve() == ROOT / "policies" / "__init__.py"
    assert Path(accel.components.__file__).resolve() == ROOT / "components" / "__init__.py"


def test_site_packages_holds_no_copy_of_the_library(editable_install):
    site = Path(sysconfig.get_paths()["purelib"])
    copies = [str(path) for name in ("policies", "components") for path in [site / "accel" / name] if path.exists()]
    assert not copies, f"stale copies (reinstall with README's `uv sync --frozen`): {copies}"


def test_the_wheel_takes_the_library_folders_without_copying_them_into_an_editable_install():
    """pyproject.toml: `sources` renames the folders inside the wheel; `force-include`, which an
    editable install would copy too, is not used."""
    import tomllib

    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert "force-include" not in wheel
    assert wheel["sources"] == {"components": "accel/components", "policies": "accel/policies"}
    assert wheel["dev-mode-dirs"] == ["."]
