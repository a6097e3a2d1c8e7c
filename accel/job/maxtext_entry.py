"""How the default programs start on the images they are pinned with: MaxText's entry module and config path (the ones
the pinned images' MaxText has, runtime.yaml `maxtext`).

MaxText renamed its package (src/MaxText -> src/maxtext) and removed the `MaxText.train` shim on 2026-04-08, so the
old `python3 -m MaxText.train MaxText/configs/base.yml` starts on neither pinned image; the form written here starts on
both (the config path is a file under each image's working directory).
"""

from __future__ import annotations

from typing import Any

from accel.job.facts import runtime


def _maxtext() -> dict[str, Any]:
    return runtime()["maxtext"]


def config_path() -> str:
    """MaxText's base config as a path that resolves in every pinned image (runtime.yaml maxtext.config)."""
    return _maxtext()["config"]


def runs_maxtext(defaults: dict[str, Any]) -> bool:
    """Whether a runtime.yaml `defaults` row's program is MaxText (it gives `maxtext_args`, not a `command`)."""
    return "maxtext_args" in defaults


def default_command(defaults: dict[str, Any]) -> str:
    """The command of a runtime.yaml `defaults` row: MaxText's pre-training entry and config with the row's
    `maxtext_args`, or the row's own `command`."""
    if runs_maxtext(defaults):
        return f"python3 -m {_maxtext()['train_module']} {config_path()} {defaults['maxtext_args']}"
    return defaults["command"]


def image_maxtext(image: str) -> dict[str, Any] | None:
    """What runtime.yaml says of the MaxText an image carries (commit, date, workdir, modules), or None."""
    return _maxtext()["images"].get(image)


def resolve_config(param: str, image: str) -> str | None:
    """The config file MaxText in `image` loads for the path `param`, or None where it cannot be there: MaxText's own
    pyconfig.resolve_config_path as that image's commit has it (runtime.yaml maxtext.images: `config_resolver`),
    run from the image's working directory over what is known of its tree (a YAML file under its `config_dir` is
    taken to exist; an absolute path elsewhere may be a mount, and is taken as given).

    Each image's resolver is the steps its commit takes after "the path if a file" and before "else src/<path>":
    lowercase, naming MaxText, the path with maxtext for MaxText if a file; configs_dir, under src/maxtext/configs/,
    the same name in MAXTEXT_CONFIGS_DIR (the package's configs) if a file. The TPU image's 834e4bae (l.153-163)
    takes configs_dir, the GPU image's c4b5e646 (l.98-112) both, in that order. The loader then opens what it
    returned, and fails when that is no file."""
    facts = image_maxtext(image)
    if facts is None:
        raise ValueError(f"runtime.yaml maxtext.images has no row for {image}")
    workdir, config_dir = facts["workdir"].rstrip("/"), facts["config_dir"].strip("/")

    def is_file(path: str) -> bool:
        if path.startswith("/"):
            if not path.startswith(f"{workdir}/"):
                return True   # outside the image's MaxText tree: a mount accel cannot see into
            path = path[len(workdir) + 1:]
        parts = [p for p in path.split("/") if p not in ("", ".")]
        return ".." not in parts and "/".join(parts).startswith(f"{config_dir}/") and path.endswith((".yml", ".yaml"))

    if is_file(param):
        return param
    resolver = facts["config_resolver"]
    steps = [resolver] if isinstance(resolver, str) else resolver
    if "lowercase" in steps and "MaxText" in param:
        lowered = param.replace("MaxText", "maxtext")
        if is_file(lowered):
            return lowered
    if "configs_dir" in steps and param.startswith("src/maxtext/configs/"):
        candidate = f"{workdir}/{config_dir}/{param[len('src/maxtext/configs/'):]}"
        if is_file(candidate):
            return candidate
    fallback = f"src/{param}"
    return fallback if is_file(fallback) else None
