"""The document `pulumi preview --json` prints, as typed models.

The CLI builds it from the engine's events (`PreviewDigest` in pulumi's display package):
`steps` hold one entry per shown step (logical steps only, unless the preview ran with
`--show-replacement-steps`; `same` steps only with `--show-sames`, except the root stack),
each carrying the old and new serialized resource state. Unknown keys are ignored because
the format grows between CLI versions; the keys this review reads are type-checked.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

URN_PREFIX = "urn:pulumi:"
# What the engine writes for a value that is known only after apply.
UNKNOWN_VALUE = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


class LenientModel(BaseModel):
    """Ignores keys it does not know: newer CLIs add fields, and that must not break a review."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


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
    inputs: dict[str, Any] = Field(default_factory=dict)
    outputs: dict[str, Any] = Field(default_factory=dict)
    protect: bool = False
    retain_on_delete: bool = Field(False, alias="retainOnDelete")

    @field_validator("inputs", "outputs", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value


class PropertyDiff(LenientModel):
    kind: str
    input_diff: bool = Field(False, alias="inputDiff")


class PreviewStep(LenientModel):
    op: str = Field(min_length=1)
    urn: str
    provider: str | None = None
    old_state: ResourceState | None = Field(None, alias="oldState")
    new_state: ResourceState | None = Field(None, alias="newState")
    diff_reasons: list[str] = Field(default_factory=list, alias="diffReasons")
    replace_reasons: list[str] = Field(default_factory=list, alias="replaceReasons")
    detailed_diff: dict[str, PropertyDiff] = Field(default_factory=dict, alias="detailedDiff")

    @field_validator("urn")
    @classmethod
    def _urn(cls, value: str) -> str:
        return check_urn(value)

    @field_validator("diff_reasons", "replace_reasons", mode="before")
    @classmethod
    def _null_list_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value

    @field_validator("detailed_diff", mode="before")
    @classmethod
    def _null_diff_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value


class PreviewDiagnostic(LenientModel):
    urn: str | None = None
    prefix: str | None = None
    message: str = ""
    severity: str = "info"


class PreviewDigest(LenientModel):
    config: dict[str, Any] | None = None
    steps: list[PreviewStep] = Field(default_factory=list)
    diagnostics: list[PreviewDiagnostic] = Field(default_factory=list)
    duration: float | None = Field(None, description="Nanoseconds (Go time.Duration)")
    change_summary: dict[str, int] = Field(default_factory=dict, alias="changeSummary")
    maybe_corrupt: bool = Field(False, alias="maybeCorrupt")

    @field_validator("steps", "diagnostics", mode="before")
    @classmethod
    def _null_list_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value

    @field_validator("change_summary", mode="before")
    @classmethod
    def _null_summary_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value


def split_urn(urn: str) -> tuple[str, str, str, str]:
    """(stack, project, type, name) of `urn:pulumi:STACK::PROJECT::PARENT$...$TYPE::NAME`."""
    stack, project, qualified_type, name = urn.removeprefix(URN_PREFIX).split("::", 3)
    return stack, project, qualified_type.rsplit("$", 1)[-1], name
