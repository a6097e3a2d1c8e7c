"""A MaxText command starts only with a module and a config its image's MaxText has.

MaxText moved from the `MaxText` package to `maxtext` and, on 2026-04-08, removed the `MaxText.train` and
`MaxText.maxengine_server` shims: a command copied from older docs (`python3 -m MaxText.train MaxText/configs/base.yml`)
fails at once on a newer image, and its config path resolves to no file on either pinned image. For the images whose
MaxText runtime.yaml `maxtext.images` knows (commit, working directory, what src/MaxText holds), the rule reads each
`python -m MODULE [CONFIG.yml]` in a container's command and says where it cannot start. Where accel cannot know (an
image of your own, a module of the new package, a config outside the image's tree) it says nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from accel.job.facts import runtime
from accel.job.maxtext_entry import image_maxtext, resolve_config
from accel.job.pod_templates import pod_templates
from accel.job.rules.registry import Breach, Scope, command_words, containers, describe, join, rule

SOURCE = ("MaxText 868098b8 (2026-04-08, 'Remove non-post-training MaxText shims'); src/maxtext/configs/pyconfig.py "
          "resolve_config_path at c4b5e646 l.98-112 and at 834e4bae l.153-163 (runtime.yaml maxtext: each pinned "
          "image's commit and tree)")
OPERATORS = {"&&", "||", ";", "|", "&"}


def python_modules(argv: list[str]) -> Iterator[tuple[str, list[str]]]:
    """(module, its arguments) of every `python[3[.N]] -m MODULE ...` in a container's command and args, reading a
    `sh -c SCRIPT` (or bash) script's commands, split at its && || ; | operators."""
    words = command_words(argv)
    if words is None:   # an unbalanced quote: the shell would refuse the script before MaxText runs
        return
    argv = words
    for start, word in enumerate(argv):
        name = os.path.basename(word)
        if (name == "python" or name.startswith("python3")) and argv[start + 1:start + 2] == ["-m"] \
                and start + 2 < len(argv):
            rest = argv[start + 3:]
            end = next((i for i, w in enumerate(rest) if w in OPERATORS), len(rest))
            yield argv[start + 2], rest[:end]


@rule("maxtext/entry-in-image", "a MaxText command names a module and config its image's MaxText has",
      source=SOURCE,
      fix="run the module and config MaxText has at the image's commit (runtime.yaml maxtext: train_module and "
          "config, what the default command runs), or pass the image your command was written for with --image")
def maxtext_entry_in_image(scope: Scope):
    facts = runtime()["maxtext"]
    fix = (f"run the module and config MaxText has at the image's commit: python3 -m {facts['train_module']} "
           f"{facts['config']} ... (runtime.yaml maxtext), or pass the image your command was written for with --image")
    for template in pod_templates(scope.manifests):
        for where, container in containers(template.spec):
            image = container.get("image")
            known = image_maxtext(image) if isinstance(image, str) else None
            argv = [*(container.get("command") or []), *(container.get("args") or [])]
            if known is None or not all(isinstance(w, str) for w in argv):
                continue
            field = join(template.path, "spec", where, "command")
            carries = f"{image} carries MaxText {known['commit'][:8]} of {known['date']}"
            for module, args in python_modules(argv):
                parts = module.split(".")
                if parts[0] == "MaxText" and (len(parts) < 2 or parts[1] not in known["legacy_package"]):
                    moved = facts["renamed"].get(module)
                    yield Breach(describe(template.owner), field,
                                 f"{carries}, which has no module {module} (src/MaxText holds "
                                 f"{', '.join(known['legacy_package']) or 'nothing'}): the container exits with "
                                 "'No module named'" + (f"; its module is now {moved}" if moved else ""), fix)
                if parts[0] not in ("MaxText", "maxtext") or not args or not args[0].endswith((".yml", ".yaml")):
                    continue
                if resolve_config(args[0], image) is None:
                    yield Breach(describe(template.owner), field,
                                 f"{carries} under {known['workdir']}, whose configs are in {known['config_dir']}: "
                                 f"the config {args[0]} resolves to no file there (MaxText's resolve_config_path "
                                 f"falls back to src/{args[0]}), so the run fails loading it; pass "
                                 f"{facts['config']}", fix)
