"""Writes of the add-on library: install, enable, disable, remove, per-person switch, skill rules
and settings.

Installing, removing and the server-wide switch are for the server's administrators
(superusers); the per-person switch and skill rules belong to each person.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext
from pydantic import JsonValue

from accounts.models import User
from addons.builtins import BUILTINS
from addons.core.manifest import manifest_parse
from addons.core.package import Package, PackageRefused, package_from_zip, package_of_entry_point
from addons.core.skill_rules import RulesRefused, check_rules
from addons.core.update import UpdatePlan, update_plan
from addons.errors import AddonConflict, AddonNotFound, ChangeRefused, NotAllowed
from addons.models import (
    HOST_SKILLS,
    AddonFile,
    AddonInstallation,
    AddonLogEntry,
    AddonSetting,
    HostSkill,
    InstalledAddon,
    SkillRule,
    SkillTag,
    SkillUse,
)
from addons.selectors import declared_setting, entry_point_find, installed_addon
from addons.skill_writer import rules_writer
from host.core.secret_guard import find_secret
from host.errors import Refusal, SecretRefused
from host.secret_text import secret_refusal
from host.stored_secrets import stored_secrets

logger = logging.getLogger(__name__)

_SKILL_KEY = re.compile(r"^[a-z][a-z0-9-]{0,39}$")


def _require_admin(user: User) -> None:
    if not user.is_superuser:
        raise NotAllowed(
            "Only an administrator of this server can install, switch or remove add-ons."
        )


@dataclass(frozen=True)
class UpdateChoice:
    """How an administrator answers an install over an installed add-on."""

    update: bool = False  # replace the installed version in place
    consent: frozenset[str] = frozenset()  # new permissions the administrator agreed to
    downgrade: bool = False  # an older version may replace a newer one
    dev: bool = False  # from an author's folder (`memory-host addon dev`), marked as such


def _plan(package: Package) -> UpdatePlan:
    row = InstalledAddon.objects.filter(addon_id=package.manifest.id).first()
    if row is None:
        return update_plan(installed=None, installed_files={}, package=package)
    files = {f.path: bytes(f.content) for f in row.files.all()}
    installed = manifest_parse(row.manifest)
    return update_plan(installed=installed, installed_files=files, package=package)


def _log(*, user: User | None, addon_id: str, action: str, detail: str) -> None:
    AddonLogEntry.objects.create(
        addon_id=addon_id[:200], action=action, detail=detail[:2000], user=user
    )


def _refuse_update(plan: UpdatePlan, choice: UpdateChoice) -> None:
    """An install over an installed add-on goes ahead only as the administrator chose."""
    if not choice.update:
        raise AddonConflict(
            gettext(
                "%(addon_id)s is already installed (version %(installed)s); to replace it with "
                "version %(offered)s, update it: the library's Update button, or install again "
                "with update=true."
            )
            % {
                "addon_id": repr(plan.addon_id),
                "installed": plan.from_version,
                "offered": plan.to_version,
            },
            changes=plan.as_json(),
        )
    if plan.direction == "downgrade" and not choice.downgrade:
        raise AddonConflict(
            gettext(
                "Version %(offered)s is older than the installed %(installed)s; confirm the "
                "downgrade (downgrade=true) to install it."
            )
            % {"offered": plan.to_version, "installed": plan.from_version},
            changes=plan.as_json(),
        )
    missing = [p for p in plan.new_permissions if p not in choice.consent]
    if missing:
        raise AddonConflict(
            gettext(
                "Version %(offered)s asks for new permissions: %(missing)s. Agree to them "
                "(consent=%(first)s …) to update."
            )
            % {"offered": plan.to_version, "missing": ", ".join(missing), "first": missing[0]},
            changes=plan.as_json(),
        )


@dataclass(frozen=True)
class Installed:
    row: InstalledAddon
    plan: UpdatePlan  # what the install changed ("new" for a first install)


def _install(
    *,
    user: User,
    package: Package,
    source: str,
    entry_point: str = "",
    choice: UpdateChoice,
) -> Installed:
    addon_id = package.manifest.id
    if addon_id in BUILTINS:
        raise AddonConflict(
            gettext("%(addon_id)s is the id of a built-in add-on.") % {"addon_id": repr(addon_id)}
        )
    with transaction.atomic(durable=True):
        row = InstalledAddon.objects.select_for_update().filter(addon_id=addon_id).first()
        plan = _plan(package)
        if row is None:
            row = InstalledAddon.objects.create(
                addon_id=addon_id,
                source=source,
                entry_point=entry_point,
                manifest=package.manifest.as_json(),
                enabled=False,  # installed, then an administrator turns it on after reading it
                dev=choice.dev,
                installed_by=user,
            )
        else:
            _refuse_update(plan, choice)
            # People's settings, switches and learned rules are keyed by the add-on id, so
            # they stay; so does the server-wide switch.
            row.source, row.entry_point, row.dev = source, entry_point, choice.dev
            row.manifest = package.manifest.as_json()
            row.save(update_fields=["source", "entry_point", "manifest", "dev", "updated_at"])
            row.files.all().delete()
        AddonFile.objects.bulk_create(
            AddonFile(addon=row, path=path, content=data, size=len(data))
            for path, data in sorted(package.files.items())
        )
        if plan.direction == "new":
            detail = f"version {plan.to_version} from {source}" + (" (development)" * choice.dev)
            _log(user=user, addon_id=addon_id, action=AddonLogEntry.Action.INSTALLED, detail=detail)
        else:
            changed = len(plan.added_files) + len(plan.changed_files) + len(plan.removed_files)
            detail = f"{plan.from_version} → {plan.to_version}, {changed} file(s) changed"
            _log(user=user, addon_id=addon_id, action=AddonLogEntry.Action.UPDATED, detail=detail)
    return Installed(row, plan)


@contextmanager
def _logged_refusal(user: User, what: str) -> Iterator[None]:
    """Install refusals reach the server log with who tried and why, not only the client."""
    try:
        yield
    except Refusal as refusal:
        logger.warning(
            "Add-on install refused (%s) for %s: %s", what, user.get_username(), refusal.message
        )
        changes = refusal.details.get("changes")
        addon_id = str(changes.get("addon_id", "")) if isinstance(changes, dict) else ""
        _log(
            user=user,
            addon_id=addon_id,
            action=AddonLogEntry.Action.REFUSED,
            detail=f"{what}: {refusal.message}",
        )
        raise


def _zip_package(data: bytes) -> Package:
    try:
        return package_from_zip(data)
    except PackageRefused as refusal:
        raise ChangeRefused(str(refusal)) from None


def _entry_point_package(name: str) -> Package:
    ep = entry_point_find(name)
    if ep is None:
        raise AddonNotFound(
            gettext("No installed distribution offers an add-on named %(name)s.")
            % {"name": repr(name)}
        )
    try:
        return package_of_entry_point(ep)
    except PackageRefused as refusal:
        raise ChangeRefused(str(refusal)) from None


def addon_install_zip(*, user: User, data: bytes, choice: UpdateChoice | None = None) -> Installed:
    """Install an uploaded package (a zip with manifest.json at its top), or update the
    installed add-on of the same id in place when the choice says so."""
    with _logged_refusal(user, "upload"):
        _require_admin(user)
        return _install(
            user=user,
            package=_zip_package(data),
            source=InstalledAddon.Source.UPLOAD,
            choice=choice or UpdateChoice(),
        )


def addon_install_entry_point(
    *, user: User, name: str, choice: UpdateChoice | None = None
) -> Installed:
    """Install (or update) the add-on an installed Python distribution offers."""
    with _logged_refusal(user, f"entry point {name[:80]!r}"):
        _require_admin(user)
        return _install(
            user=user,
            package=_entry_point_package(name),
            source=InstalledAddon.Source.ENTRY_POINT,
            entry_point=name,
            choice=choice or UpdateChoice(),
        )


def addon_zip_plan(*, user: User, data: bytes) -> UpdatePlan:
    """What installing this zip would change; nothing is written."""
    with _logged_refusal(user, "upload preview"):
        _require_admin(user)
        return _plan(_zip_package(data))


def addon_entry_point_plan(*, user: User, name: str) -> UpdatePlan:
    """What installing the distribution's add-on would change; nothing is written."""
    with _logged_refusal(user, f"entry point preview {name[:80]!r}"):
        _require_admin(user)
        return _plan(_entry_point_package(name))


def addon_set_enabled(*, user: User, addon_id: str, enabled: bool) -> None:
    """Turn an add-on on or off for the whole server. Off stops every read for turns; files
    and people's settings are kept."""
    _require_admin(user)
    state = installed_addon(addon_id)
    if state is None:
        raise AddonNotFound(
            gettext("There is no installed add-on %(addon_id)s.") % {"addon_id": repr(addon_id)}
        )
    with transaction.atomic(durable=True):
        if state.builtin:
            InstalledAddon.objects.update_or_create(
                addon_id=addon_id,
                defaults={
                    "enabled": enabled,
                    "source": InstalledAddon.Source.BUILTIN,
                    "manifest": state.manifest.as_json(),
                },
            )
        else:
            InstalledAddon.objects.filter(addon_id=addon_id).update(enabled=enabled)
        _log(
            user=user,
            addon_id=addon_id,
            action=AddonLogEntry.Action.SWITCHED,
            detail="on for the server" if enabled else "off for the server",
        )


@dataclass(frozen=True)
class Removal:
    """What removing an add-on deletes and what it keeps, said before and after."""

    addon_id: str
    name: str
    package_files: int
    package_bytes: int
    kept_settings: int
    kept_rules: int


def addon_removal_plan(*, addon_id: str) -> Removal:
    state = installed_addon(addon_id)
    if state is not None and state.builtin:
        raise NotAllowed(
            gettext("%(name)s comes with the host: turn it off instead.")
            % {"name": state.manifest.name}
        )
    if state is None or state.row is None:
        raise AddonNotFound(
            gettext("There is no installed add-on %(addon_id)s.") % {"addon_id": repr(addon_id)}
        )
    files = list(state.row.files.values_list("size", flat=True))
    return Removal(
        addon_id=addon_id,
        name=state.manifest.name,
        package_files=len(files),
        package_bytes=sum(files),
        kept_settings=AddonSetting.objects.filter(addon=addon_id).count(),
        kept_rules=SkillRule.objects.filter(addon_id=addon_id).count(),
    )


def addon_remove(*, user: User, addon_id: str) -> Removal:
    """Delete the package and everyone's switch for it. People's settings, skill rules and
    files stay, so reinstalling the add-on brings their choices back."""
    _require_admin(user)
    plan = addon_removal_plan(addon_id=addon_id)
    with transaction.atomic(durable=True):
        InstalledAddon.objects.filter(addon_id=addon_id).delete()
        AddonInstallation.objects.filter(addon=addon_id).delete()
        _log(
            user=user,
            addon_id=addon_id,
            action=AddonLogEntry.Action.REMOVED,
            detail=f"{plan.package_files} file(s) deleted; "
            f"{plan.kept_settings} setting value(s) kept",
        )
    return plan


def addon_user_set_enabled(*, user: User, addon_id: str, enabled: bool) -> None:
    """A person turns an add-on on or off for themselves, where its manifest allows it."""
    state = installed_addon(addon_id)
    if state is None:
        raise AddonNotFound(
            gettext("There is no installed add-on %(addon_id)s.") % {"addon_id": repr(addon_id)}
        )
    if not state.manifest.user_toggle:
        raise NotAllowed(
            gettext("%(name)s is switched for the whole server only.")
            % {"name": state.manifest.name}
        )
    with transaction.atomic(durable=True):
        AddonInstallation.objects.update_or_create(
            user=user, addon=addon_id, defaults={"enabled": enabled}
        )


def _skill_title(user: User, addon_id: str, skill: str) -> str:
    """The skill's name as people read it; a missing or foreign skill is not found."""
    if addon_id == HOST_SKILLS:
        host = HostSkill.objects.filter(owner=user, name=skill).first()
        if host is not None:
            return host.title
    else:
        state = installed_addon(addon_id)
        if state is not None and state.manifest.skill(skill) is not None:
            return f"{state.manifest.name} · {skill}"
    raise AddonNotFound(
        gettext("There is no skill %(skill)s in the add-on %(addon_id)s.")
        % {"skill": repr(skill), "addon_id": repr(addon_id)}
    )


def skill_rules_save(
    *, user: User, addon_id: str, skill: str, text: str, source: str = "page"
) -> str:
    """Replace the learned rules of one skill for this person (one rule a line)."""
    title = _skill_title(user, addon_id, skill)
    rules = [line.strip() for line in text.replace("\r\n", "\n").split("\n") if line.strip()]
    try:
        check_rules(rules)
    except RulesRefused as refusal:
        raise ChangeRefused(str(refusal)) from None
    finding = find_secret("\n".join(rules), known=stored_secrets(user.pk))
    if finding:
        raise ChangeRefused(
            f"Line {finding.line} looks like a secret ({finding.kind}); rules never hold secrets."
        )
    writer = rules_writer()
    if writer is not None:
        writer(user=user, addon_id=addon_id, skill=skill, title=title, rules=rules, source=source)
    else:
        with transaction.atomic(durable=True):
            SkillRule.objects.update_or_create(
                user=user, addon_id=addon_id, skill=skill, defaults={"text": "\n".join(rules)}
            )
    return "\n".join(rules)


def host_skill_create(
    *, user: User, name: str, title: str, instructions: str = "", by_assistant: bool = False
) -> HostSkill:
    """A skill of the person's own; its rules are written apart (skill_rules_save)."""
    if not _SKILL_KEY.match(name):
        raise ChangeRefused(
            gettext(
                "name: use 1 to 40 lowercase letters, digits or dashes, starting with a letter."
            )
        )
    _refuse_secret_text("instructions", [title, instructions])
    with transaction.atomic():
        skill, created = HostSkill.objects.get_or_create(
            owner=user,
            name=name,
            defaults={
                "title": title.strip()[:80] or name,
                "instructions": instructions.strip(),
                "created_by_assistant": by_assistant,
            },
        )
        if not created and not by_assistant:
            raise AddonConflict(
                gettext("You already have a skill named %(name)s.") % {"name": repr(name)}
            )
        SkillTag.objects.get_or_create(user=user, addon_id=HOST_SKILLS, skill=name, topic=name)
    return skill


def host_skill_update(*, skill: HostSkill, title: str, instructions: str) -> HostSkill:
    _refuse_secret_text("instructions", [title, instructions])
    skill.title = title.strip()[:80] or skill.name
    skill.instructions = instructions.strip()
    with transaction.atomic(durable=True):
        skill.save(update_fields=["title", "instructions"])
    return skill


def host_skill_opened(*, skill: HostSkill) -> None:
    """The person opened the skill: the "NEW" badge goes."""
    if skill.opened_at is None:
        HostSkill.objects.filter(pk=skill.pk, opened_at=None).update(opened_at=timezone.now())
        skill.opened_at = timezone.now()


def host_skill_delete(*, skill: HostSkill, source: str) -> None:
    """Delete a host-made skill with its tags and its rules (the note goes by a change set,
    so undoing that brings the skill and its rules back)."""
    with transaction.atomic(durable=True):
        writer = rules_writer()
        if writer is not None:
            writer(
                user=skill.owner,
                addon_id=HOST_SKILLS,
                skill=skill.name,
                title=skill.title,
                rules=[],
                source=source,
            )
        SkillTag.objects.filter(user=skill.owner, addon_id=HOST_SKILLS, skill=skill.name).delete()
        SkillRule.objects.filter(user=skill.owner, addon_id=HOST_SKILLS, skill=skill.name).delete()
        skill.delete()


def host_skill_forget_unused(*, user: User, name: str) -> None:
    """A skill the assistant made whose only rule was undone, never opened: it goes again."""
    with transaction.atomic():
        if SkillRule.objects.filter(user=user, addon_id=HOST_SKILLS, skill=name).exists():
            return
        gone, _ = HostSkill.objects.filter(
            owner=user, name=name, created_by_assistant=True, opened_at=None
        ).delete()
        if gone:
            SkillTag.objects.filter(user=user, addon_id=HOST_SKILLS, skill=name).delete()


def skill_tags_set(*, user: User, addon_id: str, skill: str, topics: list[str]) -> list[str]:
    """Replace the person's topic tags of one skill (theirs or an add-on's)."""
    _skill_title(user, addon_id, skill)
    clean = sorted({" ".join(topic.lower().split()) for topic in topics if topic.strip()})
    if any(len(topic) > 40 for topic in clean) or len(clean) > 20:
        raise ChangeRefused(gettext("topics: at most 20 topics of at most 40 characters each."))
    with transaction.atomic(durable=True):
        SkillTag.objects.filter(user=user, addon_id=addon_id, skill=skill).delete()
        SkillTag.objects.bulk_create(
            SkillTag(user=user, addon_id=addon_id, skill=skill, topic=topic) for topic in clean
        )
    return clean


def addon_setting_put(*, user: User, addon: str, key: str, value: Any) -> Any:
    declared = declared_setting(addon, key)
    try:
        clean = declared.check(value)
    except ValueError as error:
        raise ChangeRefused(str(error)) from error
    _refuse_secret_text(key, clean)
    with transaction.atomic(durable=True):
        AddonSetting.objects.update_or_create(
            user=user, addon=addon, key=key, defaults={"value": clean}
        )
    return clean


def _texts(value: JsonValue) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _texts(item)]
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    return []


def _refuse_secret_text(key: str, value: JsonValue) -> None:
    """Setting texts reach add-on prompts: no secret may be stored in one."""
    for text in _texts(value):
        finding = find_secret(text)
        if finding:
            raise SecretRefused(f"{key}: {secret_refusal(finding)}", kind=finding.kind)


def skill_uses_record(*, user_id: int, skills: list[tuple[str, str]]) -> None:
    """Count one sending of each skill of a turn (M21 statistics): one statement."""
    if not skills:
        return
    now = timezone.now()
    table = SkillUse._meta.db_table
    rows = ", ".join(["(%s, %s, %s, 1, %s)"] * len(skills))
    params: list[int | str | datetime] = []
    for addon_id, skill in skills:
        params += [user_id, addon_id, skill, now]
    # An upsert: two turns of one person that finish together both count.
    sql = (
        f"INSERT INTO {table} (user_id, addon_id, skill, sent_count, last_sent_at) "  # noqa: S608 (table name from the model)
        f"VALUES {rows} ON CONFLICT (user_id, addon_id, skill) DO UPDATE SET "
        f"sent_count = {table}.sent_count + 1, last_sent_at = EXCLUDED.last_sent_at"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
