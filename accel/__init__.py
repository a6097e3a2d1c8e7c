"""accel: infrastructure as code for training and serving large models on TPUs and GPUs.

One import name for the whole library. `accel.components` (Pulumi components) and
`accel.policies` (decisions and the guardrail pack) are the repository's top-level
`components/` and `policies/` folders: the wheel places them inside this package
(pyproject.toml, the wheel's `sources`), and in a source checkout (an editable install, which
copies nothing, or Pulumi running the checkout's `__main__.py`) they are found through `__path__`
below.
"""

from pathlib import Path as _Path

_checkout = _Path(__file__).resolve().parent.parent
if (_checkout / "Pulumi.yaml").is_file() and not (_Path(__file__).parent / "components").exists():
    # Only the two library folders are wanted from the checkout's top; __path__ takes whole
    # directories, so the checkout itself is added and the rest of it is simply never imported.
    __path__.append(str(_checkout))  # noqa: F821 (__path__ exists in a package's __init__)
