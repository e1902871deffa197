from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Literal

from ninja import Field, ModelSchema, Schema

from accounts.models import AIProfile, ApiToken, User
from host.schemas import Moment


class ErrorOut(Schema):
    detail: str


class AISettingsOut(Schema):
    estimate_complexity: str = Field(
        description="As it applies now (M20): a locked organization value wins."
    )
    estimate_complexity_locked: bool = Field(
        description="The organization set and locked it; a change is refused (403)."
    )


class AISettingsIn(Schema):
    estimate_complexity: Literal["off", "automatic", "always"] = Field(
        examples=["automatic"], description="Off, Automatic or Always (M20)."
    )


class MeOut(ModelSchema):
    class Meta:
        model = User
        fields: ClassVar = ["id", "username", "email"]


class AIProfileOut(ModelSchema):
    has_api_key: bool

    class Meta:
        model = AIProfile
        fields: ClassVar = [
            "id",
            "name",
            "base_url",
            "model",
            "context_window",
            "role",
            "is_default",
            "supports_tools",
            "strict_tools",
            "runs_locally",
        ]


class AIProfileIn(Schema):
    name: str
    base_url: str
    model: str
    context_window: int = 8192
    role: AIProfile.Role = AIProfile.Role.TEXT
    is_default: bool = False
    strict_tools: bool = Field(
        default=False,
        description="Offer the model strict tool schemas (every field required, the "
        "optional ones nullable); only for models that support strict mode.",
    )
    runs_locally: bool = Field(
        default=False,
        description="The model runs on this machine: what the host sends it is not "
        "masked (M11). Leave off for any outside service.",
    )
    api_key: str = ""


_READS_OWN_RULE_FILES = (
    "The client reads its own rule files (CLAUDE.md, AGENTS.md …): the turn context it gets "
    "through this token (REST turn-context, MCP) leaves your reference files out."
)


class ApiTokenIn(Schema):
    name: str
    scope: ApiToken.Scope = ApiToken.Scope.READ_WRITE
    expires_at: Moment | None = None
    reads_own_rule_files: bool = Field(False, description=_READS_OWN_RULE_FILES)


class ApiTokenPatch(Schema):
    reads_own_rule_files: bool = Field(description=_READS_OWN_RULE_FILES)


class ApiTokenOut(Schema):
    id: int
    name: str
    prefix: str
    scope: ApiToken.Scope
    reads_own_rule_files: bool
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None


class ApiTokenCreatedOut(ApiTokenOut):
    token: str
