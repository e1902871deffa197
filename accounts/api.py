from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Status

from accounts.auth import signed_in_user
from accounts.models import AIProfile, ApiToken, User
from accounts.schemas import (
    AIProfileIn,
    AIProfileOut,
    AISettingsIn,
    AISettingsOut,
    ApiTokenCreatedOut,
    ApiTokenIn,
    ApiTokenOut,
    ApiTokenPatch,
    ErrorOut,
    MeOut,
)
from accounts.selectors import estimate_complexity_for, profile_for_user, token_for_user
from accounts.services import ai_profile_delete as ai_profile_delete_service
from accounts.services import (
    ai_profile_save,
    api_token_create,
    api_token_revoke,
    api_token_set_reads_own_rule_files,
    estimate_complexity_set,
)

router = Router(tags=["accounts"])


@router.get("/me", response=MeOut, summary="The signed-in account")
def me(request: HttpRequest) -> User:
    return signed_in_user(request)


def _ai_settings(user: User) -> AISettingsOut:
    setting = estimate_complexity_for(user)
    return AISettingsOut(
        estimate_complexity=setting.mode, estimate_complexity_locked=setting.locked
    )


@router.get("/ai-settings", response=AISettingsOut, summary="Your AI settings as they apply")
def ai_settings_get(request: HttpRequest) -> AISettingsOut:
    return _ai_settings(signed_in_user(request))


@router.put(
    "/ai-settings",
    response={200: AISettingsOut, 400: ErrorOut, 403: ErrorOut},
    summary="Change your AI settings; a value the organization locked is refused (403)",
)
def ai_settings_put(request: HttpRequest, payload: AISettingsIn) -> AISettingsOut:
    user = estimate_complexity_set(user=signed_in_user(request), mode=payload.estimate_complexity)
    return _ai_settings(user)


@router.get("/ai-profiles", response=list[AIProfileOut], summary="List your AI profiles")
def ai_profile_list(request: HttpRequest) -> list[AIProfile]:
    return list(AIProfile.objects.filter(owner=signed_in_user(request)))


@router.post(
    "/ai-profiles",
    response={201: AIProfileOut, 400: ErrorOut},
    summary="Add an AI profile (the API key is write-only)",
)
def ai_profile_create(request: HttpRequest, payload: AIProfileIn) -> Status[AIProfile]:
    data = payload.dict(exclude={"api_key"})
    profile = AIProfile(owner=signed_in_user(request), **data)
    return Status(201, ai_profile_save(profile=profile, api_key=payload.api_key))


@router.put(
    "/ai-profiles/{profile_id}",
    response={200: AIProfileOut, 400: ErrorOut, 404: ErrorOut},
    summary="Change an AI profile; an empty api_key keeps the stored key",
)
def ai_profile_update(request: HttpRequest, profile_id: int, payload: AIProfileIn) -> AIProfile:
    profile = profile_for_user(signed_in_user(request), profile_id)
    for field, value in payload.dict(exclude={"api_key"}).items():
        setattr(profile, field, value)
    return ai_profile_save(profile=profile, api_key=payload.api_key)


@router.delete(
    "/ai-profiles/{profile_id}",
    response={204: None, 404: ErrorOut},
    summary="Delete an AI profile",
)
def ai_profile_delete(request: HttpRequest, profile_id: int) -> Status[None]:
    ai_profile_delete_service(profile=profile_for_user(signed_in_user(request), profile_id))
    return Status(204, None)


@router.get("/tokens", response=list[ApiTokenOut], summary="List your personal API tokens")
def api_token_list(request: HttpRequest) -> list[ApiToken]:
    return list(ApiToken.objects.filter(user=signed_in_user(request)))


@router.post(
    "/tokens",
    response={201: ApiTokenCreatedOut, 400: ErrorOut},
    summary="Create a personal API token (the token is shown only in this answer)",
    description=(
        "Scopes: `read_write` (default), `read_only` (a write is a 403), `bank_only` "
        "(only the project-bank endpoints and bank tools). `expires_at` is optional. "
        "Tokens are managed with a signed-in session, never with a token."
    ),
)
def api_token_new(request: HttpRequest, payload: ApiTokenIn) -> Status[dict[str, object]]:
    row, token = api_token_create(
        user=signed_in_user(request),
        name=payload.name,
        scope=payload.scope,
        expires_at=payload.expires_at,
        reads_own_rule_files=payload.reads_own_rule_files,
    )
    return Status(
        201,
        {
            "id": row.pk,
            "name": row.name,
            "prefix": row.prefix,
            "scope": row.scope,
            "reads_own_rule_files": row.reads_own_rule_files,
            "created_at": row.created_at,
            "expires_at": row.expires_at,
            "last_used_at": None,
            "revoked_at": None,
            "token": token,
        },
    )


@router.patch(
    "/tokens/{token_id}",
    response={200: ApiTokenOut, 404: ErrorOut},
    summary="Change whether a token's client reads its own rule files",
)
def api_token_update(request: HttpRequest, token_id: int, payload: ApiTokenPatch) -> ApiToken:
    token = token_for_user(signed_in_user(request), token_id)
    api_token_set_reads_own_rule_files(token=token, on=payload.reads_own_rule_files)
    return token


@router.delete("/tokens/{token_id}", response={204: None, 404: ErrorOut}, summary="Revoke a token")
def api_token_delete(request: HttpRequest, token_id: int) -> Status[None]:
    api_token_revoke(token=token_for_user(signed_in_user(request), token_id))
    return Status(204, None)
