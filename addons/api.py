"""The add-on JSON API: the library, its switches, and sdk.userSettings for every add-on."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import File, Form, Router, Status, UploadedFile
from pydantic import JsonValue

from accounts.auth import signed_in_user
from accounts.models import User
from addons.core.package import MAX_PACKAGE_BYTES, too_large
from addons.core.update import UpdatePlan
from addons.errors import AddonNotFound, ChangeRefused, NotAllowed
from addons.models import HOST_SKILLS, HostSkill
from addons.schemas import (
    AddonOut,
    EnabledIn,
    EntryPointIn,
    EntryPointNameIn,
    HostSkillEditIn,
    HostSkillIn,
    RemovalOut,
    SettingIn,
    SettingOut,
    SkillOut,
    SkillRulesIn,
    SkillRulesOut,
    SkillTagsIn,
    UpdateIn,
    UpdatePlanOut,
)
from addons.selectors import (
    AddonState,
    SkillView,
    addon_setting_get,
    addon_settings_values,
    installed_addon,
    installed_addons,
    person_skill,
    person_skills,
    switched_off_by,
    user_enabled,
)
from addons.services import (
    Installed,
    UpdateChoice,
    addon_entry_point_plan,
    addon_install_entry_point,
    addon_install_zip,
    addon_remove,
    addon_set_enabled,
    addon_setting_put,
    addon_user_set_enabled,
    addon_zip_plan,
    host_skill_create,
    host_skill_delete,
    host_skill_update,
    skill_rules_save,
    skill_tags_set,
)
from host.schemas import ErrorOut

router = Router(tags=["add-ons"])
skills_router = Router(tags=["skills"])
ERRORS = {400: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut}
KEPT_NOTE = (
    "People's settings, skill rules and files are kept; reinstalling the add-on brings "
    "their choices back."
)


def _out(state: AddonState, off: set[str]) -> AddonOut:
    manifest = state.manifest
    return AddonOut(
        id=manifest.id,
        name=manifest.name,
        version=manifest.version,
        author=manifest.author,
        description=manifest.description,
        source=state.source,
        enabled_for_server=state.enabled,
        enabled_for_me=user_enabled(state, off),
        user_toggle=manifest.user_toggle,
        dev=state.row is not None and state.row.dev,
        manifest=manifest.as_json(),
        changes=None,
    )


def _state(addon: str) -> AddonState:
    state = installed_addon(addon)
    if state is None:
        raise AddonNotFound(f"There is no installed add-on {addon!r}.")
    return state


@router.get("/", response=list[AddonOut], summary="Installed add-ons, with their manifests")
def addon_list(request: HttpRequest) -> list[AddonOut]:
    off = switched_off_by(signed_in_user(request))
    return [_out(state, off) for state in installed_addons()]


def _plan_out(plan: UpdatePlan) -> UpdatePlanOut:
    return UpdatePlanOut.model_validate(plan, from_attributes=True)


def _choice(payload: UpdateIn) -> UpdateChoice:
    return UpdateChoice(
        update=payload.update,
        consent=frozenset(payload.consent),
        downgrade=payload.downgrade,
        dev=payload.dev,
    )


def _installed(user: User, installed: Installed) -> Status[AddonOut]:
    out = _out(_state(installed.row.addon_id), switched_off_by(user))
    out.changes = _plan_out(installed.plan)
    return Status(201 if installed.plan.direction == "new" else 200, out)


def _upload_bytes(package: UploadedFile) -> bytes:
    if package.size is not None and package.size > MAX_PACKAGE_BYTES:
        raise ChangeRefused(too_large(package.size))
    return bytes(package.read(MAX_PACKAGE_BYTES + 1))


@router.post(
    "/install",
    response={200: AddonOut, 201: AddonOut, **ERRORS},
    summary="Install an uploaded package (administrators); a new one starts switched off",
    description=(
        "An add-on of the same id that is installed is refused (409, with the changes) unless "
        "`update` is true: then it is replaced in place, keeping people's settings, switches "
        "and learned rules and its on/off state (200). New permissions need `consent`, an "
        "older version needs `downgrade`."
    ),
)
def install_upload(
    request: HttpRequest, package: File[UploadedFile], choice: Form[UpdateIn]
) -> Status[AddonOut]:
    user = signed_in_user(request)
    installed = addon_install_zip(user=user, data=_upload_bytes(package), choice=_choice(choice))
    return _installed(user, installed)


@router.post(
    "/install/preview",
    response={200: UpdatePlanOut, **ERRORS},
    summary="What installing an uploaded package would change; nothing is installed",
)
def install_upload_preview(request: HttpRequest, package: File[UploadedFile]) -> UpdatePlanOut:
    plan = addon_zip_plan(user=signed_in_user(request), data=_upload_bytes(package))
    return _plan_out(plan)


@router.post(
    "/install-entry-point",
    response={200: AddonOut, 201: AddonOut, **ERRORS},
    summary="Install or update the add-on an installed Python distribution offers (administrators)",
)
def install_entry_point(request: HttpRequest, payload: EntryPointIn) -> Status[AddonOut]:
    user = signed_in_user(request)
    installed = addon_install_entry_point(user=user, name=payload.name, choice=_choice(payload))
    return _installed(user, installed)


@router.post(
    "/install-entry-point/preview",
    response={200: UpdatePlanOut, **ERRORS},
    summary="What installing a distribution's add-on would change; nothing is installed",
)
def install_entry_point_preview(request: HttpRequest, payload: EntryPointNameIn) -> UpdatePlanOut:
    plan = addon_entry_point_plan(user=signed_in_user(request), name=payload.name)
    return _plan_out(plan)


@router.put(
    "/{addon}/enabled",
    response={200: AddonOut, **ERRORS},
    summary="Switch an add-on on or off for the server (administrators); off keeps its files",
)
def set_enabled(request: HttpRequest, addon: str, payload: EnabledIn) -> AddonOut:
    user = signed_in_user(request)
    addon_set_enabled(user=user, addon_id=addon, enabled=payload.enabled)
    return _out(_state(addon), switched_off_by(user))


@router.put(
    "/{addon}/enabled-for-me",
    response={200: AddonOut, **ERRORS},
    summary="Switch an add-on on or off for yourself, where its manifest allows it",
)
def set_enabled_for_me(request: HttpRequest, addon: str, payload: EnabledIn) -> AddonOut:
    user = signed_in_user(request)
    addon_user_set_enabled(user=user, addon_id=addon, enabled=payload.enabled)
    return _out(_state(addon), switched_off_by(user))


@router.delete(
    "/{addon}",
    response={200: RemovalOut, **ERRORS},
    summary="Remove an installed add-on (administrators); people's settings and files are kept",
)
def remove(request: HttpRequest, addon: str) -> RemovalOut:
    removal = addon_remove(user=signed_in_user(request), addon_id=addon)
    return RemovalOut(
        addon_id=removal.addon_id,
        deleted_package_files=removal.package_files,
        kept_settings=removal.kept_settings,
        kept_rules=removal.kept_rules,
        kept_note=KEPT_NOTE,
    )


@router.get(
    "/{addon}/settings",
    response={200: dict[str, JsonValue], 404: ErrorOut},
    summary="All your settings of an add-on (declared defaults where you chose nothing)",
)
def settings_all(request: HttpRequest, addon: str) -> dict[str, JsonValue]:
    return addon_settings_values(user=signed_in_user(request), addon=addon)


@router.get(
    "/{addon}/settings/{key}",
    response={200: SettingOut, 404: ErrorOut},
    summary="Read a user setting (sdk.userSettings.get)",
)
def setting_get(request: HttpRequest, addon: str, key: str) -> SettingOut:
    value = addon_setting_get(user=signed_in_user(request), addon=addon, key=key)
    return SettingOut(addon=addon, key=key, value=value)


@router.put(
    "/{addon}/settings/{key}",
    response={200: SettingOut, 400: ErrorOut, 404: ErrorOut},
    summary="Write a user setting (sdk.userSettings.set); checked against the declaration",
    openapi_extra={
        "requestBody": {"content": {"application/json": {"example": {"value": "formal"}}}}
    },
)
def setting_put(request: HttpRequest, addon: str, key: str, payload: SettingIn) -> SettingOut:
    value = addon_setting_put(
        user=signed_in_user(request), addon=addon, key=key, value=payload.value
    )
    return SettingOut(addon=addon, key=key, value=value)


@router.get(
    "/{addon}/skills/{skill}/rules",
    response={200: SkillRulesOut, 404: ErrorOut},
    summary="The learned rules you keep for a skill",
)
def rules_get(request: HttpRequest, addon: str, skill: str) -> SkillRulesOut:
    found = person_skill(signed_in_user(request), addon, skill)
    return SkillRulesOut(addon=addon, skill=skill, text="\n".join(found.rules))


@router.put(
    "/{addon}/skills/{skill}/rules",
    response={200: SkillRulesOut, **ERRORS},
    summary="Replace the learned rules of a skill (one rule a line)",
)
def rules_put(request: HttpRequest, addon: str, skill: str, payload: SkillRulesIn) -> SkillRulesOut:
    text = skill_rules_save(
        user=signed_in_user(request), addon_id=addon, skill=skill, text=payload.text, source="api"
    )
    return SkillRulesOut(addon=addon, skill=skill, text=text)


# --- Skills (M21): every skill a person has, their tags and the skills the host made ------


def _skill_out(skill: SkillView) -> SkillOut:
    return SkillOut(
        addon=skill.addon_id,
        name=skill.name,
        title=skill.title,
        description=skill.description,
        topics=list(skill.builtin_topics),
        tags=list(skill.tags),
        rules=list(skill.rules),
        sent_count=skill.sent_count,
        last_sent_at=skill.last_sent_at,
        host_made=skill.host_skill is not None,
        new=skill.is_new,
    )


def _host_skill(request: HttpRequest, addon: str, name: str) -> HostSkill:
    found = person_skill(signed_in_user(request), addon, name)
    if found.host_skill is None:
        raise NotAllowed("An add-on's skill is changed by its add-on; you can tag it.")
    return found.host_skill


@skills_router.get("/", response=list[SkillOut], summary="Your skills: add-ons' and the host's")
def skill_list(request: HttpRequest) -> list[SkillOut]:
    return [_skill_out(skill) for skill in person_skills(signed_in_user(request))]


@skills_router.post(
    "/", response={201: SkillOut, **ERRORS}, summary="Make a skill of your own (host-made)"
)
def skill_create(request: HttpRequest, payload: HostSkillIn) -> Status[SkillOut]:
    user = signed_in_user(request)
    skill = host_skill_create(
        user=user, name=payload.name, title=payload.title, instructions=payload.instructions
    )
    return Status(201, _skill_out(person_skill(user, HOST_SKILLS, skill.name)))


@skills_router.get(
    "/{addon}/{name}", response={200: SkillOut, 404: ErrorOut}, summary="One of your skills"
)
def skill_get(request: HttpRequest, addon: str, name: str) -> SkillOut:
    return _skill_out(person_skill(signed_in_user(request), addon, name))


@skills_router.put(
    "/{addon}/{name}", response={200: SkillOut, **ERRORS}, summary="Edit a host-made skill"
)
def skill_edit(request: HttpRequest, addon: str, name: str, payload: HostSkillEditIn) -> SkillOut:
    skill = _host_skill(request, addon, name)
    host_skill_update(skill=skill, title=payload.title, instructions=payload.instructions)
    return _skill_out(person_skill(signed_in_user(request), addon, name))


@skills_router.delete(
    "/{addon}/{name}", response={204: None, **ERRORS}, summary="Delete a host-made skill"
)
def skill_delete(request: HttpRequest, addon: str, name: str) -> Status[None]:
    host_skill_delete(skill=_host_skill(request, addon, name), source="api")
    return Status(204, None)


@skills_router.put(
    "/{addon}/{name}/tags",
    response={200: SkillOut, **ERRORS},
    summary="Replace your topic tags of a skill",
)
def skill_tags(request: HttpRequest, addon: str, name: str, payload: SkillTagsIn) -> SkillOut:
    user = signed_in_user(request)
    skill_tags_set(user=user, addon_id=addon, skill=name, topics=payload.topics)
    return _skill_out(person_skill(user, addon, name))
