"""An OCI / Docker image reference, checked by the grammar the container runtimes parse.

The grammar is distribution/reference's (github.com/distribution/reference, reference.go and
regexp.go, the package containerd, CRI-O and the kubelet's image pull use):

    reference       := name [ ":" tag ] [ "@" digest ]
    name            := [domain "/"] remote-name
    domain          := host [":" port-number]
    host            := domain-name | IPv4address | "[" IPv6address "]"
    domain-name     := domain-component ["." domain-component]*
    domain-component:= /([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])/
    remote-name     := path-component ["/" path-component]*
    path-component  := alpha-numeric [separator alpha-numeric]*
    alpha-numeric   := /[a-z0-9]+/
    separator       := /[_.]|__|[-]*/
    tag             := /[\\w][\\w.-]{0,127}/
    digest          := algorithm ":" hex   (algorithm: /[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*/,
                                            hex: /[0-9a-fA-F]{32,}/)

and the name (domain and path) is at most 255 characters (NameTotalLengthMax). A reference that
breaks it would leave every pod in `InvalidImageName`; text with spaces, `$(...)` or a newline is
refused here rather than written into a manifest.
"""

from __future__ import annotations

import re

from accel.base.errors import UsageError

NAME_TOTAL_LENGTH_MAX = 255
_ALPHA_NUMERIC = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT = rf"{_ALPHA_NUMERIC}(?:{_SEPARATOR}{_ALPHA_NUMERIC})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[(?:[a-fA-F0-9:]+)\])"
_DOMAIN = rf"{_HOST}(?::[0-9]+)?"
_NAME = rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
REFERENCE = re.compile(rf"(?P<name>{_NAME})(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?", re.ASCII)

EXAMPLES = "e.g. nvcr.io/nvidia/pytorch:24.10-py3 or us-docker.pkg.dev/PROJECT/REPO/IMAGE@sha256:<64 hex>"


def check_image_reference(text: str, field: str = "--image") -> str:
    """`text` when it is a valid image reference; UsageError (exit 2) naming `field` otherwise."""
    if not isinstance(text, str) or not text:
        raise UsageError(f"{field}: empty; give a container image reference, {EXAMPLES}")
    shown = text if len(text) <= 80 else text[:77] + "..."
    match = REFERENCE.fullmatch(text)
    if match is None:
        hint = ""
        if any(ch.isspace() for ch in text):
            hint = " (it holds white space)"
        elif any(ch.isupper() for ch in text.split("/")[-1].split(":")[0].split("@")[0]):
            hint = " (the repository path must be lower case)"
        raise UsageError(f"{field}: {shown!r} is not an image reference{hint}; the grammar is "
                         f"[registry[:port]/]path[:tag][@sha256:digest], {EXAMPLES}")
    if len(match.group("name")) > NAME_TOTAL_LENGTH_MAX:
        raise UsageError(f"{field}: the image name is {len(match.group('name')):,} characters; an image name "
                         f"(registry and path) is at most {NAME_TOTAL_LENGTH_MAX}")
    return text
