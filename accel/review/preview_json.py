"""The document `pulumi preview --json` prints, as typed models.

The CLI builds it from the engine's events (`PreviewDigest` in pulumi's display package):
`steps` hold one entry per shown step (logical steps only, unless the preview ran with
`--show-replacement-steps`; `same` steps only with `--show-sames`, except the root stack),
each carrying the old and new serialized resource state. Unknown keys are ignored because
the format grows between CLI versions; the keys this review reads are type-checked.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

URN_PREFIX = "urn:pulumi:"
# What the engine writes for a value that is known only after apply.
UNKNOWN_VALUE = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


class LenientModel(BaseModel):
    """Ignores keys it does not know: newer CLIs add fields, and that must not break a review."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


# The CLI writes null for an empty list or map (Go's nil slice or map): read it as the empty one.
NullAsEmptyDict = BeforeValidator(lambda value: {} if value is None else value)
NullAsEmptyList = BeforeValidator(lambda value: [] if value is None else value)


def check_urn(value: str) -> str:
    if not value.startswith(URN_PREFIX) or value.count("::") < 3:
        raise ValueError("not a Pulumi URN (expected urn:pulumi:STACK::PROJECT::TYPE::NAME)")
    return value


class ResourceState(LenientModel):
    """One resource's serialized state (apitype.ResourceV3), as far as a review needs it."""

    urn: str | None = None
    type: str | None = None
    custom: bool = True
    delete: bool = False
    id: str | None = None
    parent: str | None = None
    provider: str | None = None
    inputs: Annotated[dict[str, Any], NullAsEmptyDict] = Field(default_factory=dict)
    outputs: Annotated[dict[str, Any], NullAsEmptyDict] = Field(default_factory=dict)
    protect: bool = False
    retain_on_delete: bool = Field(False, alias="retainOnDelete")


class PropertyDiff(LenientModel):
    kind: str
    input_diff: bool = Field(False, alias="inputDiff")


class PreviewStep(LenientModel):
    op: str = Field(min_length=1)
    urn: str
    provider: str | None = None
    old_state: ResourceState | None = Field(None, alias="oldState")
    new_state: ResourceState | None = Field(None, alias="newState")
    diff_reasons: Annotated[list[str], NullAsEmptyList] = Field(default_factory=list, alias="diffReasons")
    replace_reasons: Annotated[list[str], NullAsEmptyList] = Field(default_factory=list, alias="replaceReasons")
    detailed_diff: Annotated[dict[str, PropertyDiff], NullAsEmptyDict] = Field(default_factory=dict, alias="detailedDiff")

    @field_validator("urn")
    @classmethod
    def _urn(cls, value: str) -> str:
        return check_urn(value)


class PreviewDiagnostic(LenientModel):
    urn: str | None = None
    prefix: str | None = None
    message: str = ""
    severity: str = "info"


class PreviewDigest(LenientModel):
    config: dict[str, Any] | None = None
    steps: Annotated[list[PreviewStep], NullAsEmptyList] = Field(default_factory=list)
    diagnostics: Annotated[list[PreviewDiagnostic], NullAsEmptyList] = Field(default_factory=list)
    duration: float | None = Field(None, description="Nanoseconds (Go time.Duration)")
    change_summary: Annotated[dict[str, int], NullAsEmptyDict] = Field(default_factory=dict, alias="changeSummary")
    maybe_corrupt: bool = Field(False, alias="maybeCorrupt")


def split_urn(urn: str) -> tuple[str, str, str, str]:
    """(stack, project, type, name) of `urn:pulumi:STACK::PROJECT::PARENT$...$TYPE::NAME`."""
    stack, project, qualified_type, name = urn.removeprefix(URN_PREFIX).split("::", 3)
    return stack, project, qualified_type.rsplit("$", 1)[-1], name
