"""Page data for the memory views: what one scope looks like to the person."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Case, Value, When
from django.http import HttpRequest
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

from accounts.models import User
from addons.models import AddonSetting
from host.core.secret_guard import SecretFinding, find_secret
from host.core.tokens import estimate_tokens
from host.secret_text import kind_label
from memory_addon.addons import MEMORY_ADDON, SAVE_MODE
from memory_addon.core import entries
from memory_addon.models import MemoryFile, MemoryScope
from memory_addon.selectors import scopes_for_user
from memory_addon.services.context import turn_context_build
from memory_addon.services.notes import note_key
from memory_addon.services.policy import Policy, kill_switch_on, policy_for
from memory_addon.services.scopes import index_path, scope_folder
from memory_addon.turns import Turn


@dataclass(frozen=True)
class EntryRow:
    item: entries.Item
    sent: bool
    tokens: int
    key: str = ""
    topic: str = ""  # the `-> topic.md` this note points to
    topic_exists: bool = False


@dataclass(frozen=True)
class Capacity:
    """One measure of the index against its cap, as the model is sent it (fences excluded)."""

    label: str
    used: int
    cap: int

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.used / self.cap)) if self.cap else 0


@dataclass(frozen=True)
class SecretBanner:
    path: str
    line: int
    kind_label: str


@dataclass
class ScopePage:
    scope: MemoryScope
    folder: str
    index: MemoryFile | None
    rows: list[EntryRow]
    tokens_sent: int
    budget: int
    omitted: int
    secret_banners: list[SecretBanner] = field(default_factory=list)

    @property
    def budget_percent(self) -> int:
        return min(100, round(100 * self.tokens_sent / self.budget)) if self.budget else 0

    @property
    def capacity(self) -> list[Capacity]:
        content = self.index.content if self.index else ""
        return [
            Capacity(
                gettext("lines"), entries.count_lines(content), settings.MEMORY_INDEX_MAX_LINES
            ),
            Capacity(
                gettext("bytes"), entries.sent_bytes(content), settings.MEMORY_INDEX_MAX_BYTES
            ),
        ]

    @property
    def fullest(self) -> Capacity:
        """What limits this memory first: shown as "Memory N% full"."""
        return max(self.capacity, key=lambda measure: measure.percent)


def turn_for_scope(user: User, scope: MemoryScope) -> Turn:
    """The turn whose memory block this scope's entries would join."""
    return Turn(user=user, agent=scope.agent, binding=scope.binding, chat_key=scope.chat_key)


# A file's secret finding depends on its text alone: kept per process by content hash, so
# a page view scans only the files that changed since, not all of a person's notes.
_FINDINGS_KEPT = 20_000
_findings: OrderedDict[str, SecretFinding | None] = OrderedDict()
_findings_lock = threading.Lock()


def _secret_banners(rows: list[tuple[int, str, str]]) -> list[SecretBanner]:
    """rows: each file's (pk, path, sha256)."""
    unseen = [pk for pk, _, sha in rows if sha not in _findings]
    if unseen:
        for sha, content in MemoryFile.objects.filter(pk__in=unseen).values_list(
            "sha256", "content"
        ):
            finding = find_secret(content)
            with _findings_lock:
                _findings[sha] = finding
                while len(_findings) > _FINDINGS_KEPT:
                    _findings.popitem(last=False)
    banners = []
    for _, path, sha in sorted(rows, key=lambda row: row[1]):
        finding = _findings.get(sha)
        if finding:
            banners.append(SecretBanner(path, finding.line, kind_label(finding.kind)))
    return banners


def scope_page(user: User, scope: MemoryScope, policy: Policy) -> ScopePage:
    # One read: every file's path and hash, and the text of the index only (topic files
    # are named, not shown, on this page).
    index_file = index_path(scope)
    files = list(
        MemoryFile.objects.filter(scope=scope)
        .annotate(index_text=Case(When(path=index_file, then="content"), default=Value(None)))
        .values_list("pk", "path", "sha256", "index_text")
    )
    paths = {path for _, path, _, _ in files}
    index = next(
        (
            MemoryFile(pk=pk, scope=scope, path=path, sha256=sha, content=text)
            for pk, path, sha, text in files
            if path == index_file
        ),
        None,
    )
    items = entries.send_order(entries.parse_items(index.content if index else ""))
    context = turn_context_build(turn_for_scope(user, scope), policy)
    folder = scope_folder(scope)
    sent_keys = {(s.entry_id, s.text) for s in context.sent if s.scope == folder}
    rows = []
    for item in items:
        line = entries.parse_index_line(item.text)
        rows.append(
            EntryRow(
                item,
                (item.entry_id, item.text) in sent_keys,
                estimate_tokens(item.text),
                key=note_key(item),
                topic=line.file if line else "",
                topic_exists=line is not None and line.file in paths,
            )
        )
    banners = _secret_banners([(pk, path, sha) for pk, path, sha, _ in files])
    return ScopePage(
        scope=scope,
        folder=folder,
        index=index,
        rows=rows,
        tokens_sent=context.tokens,
        budget=context.budget,
        omitted=context.omitted,
        secret_banners=banners,
    )


@dataclass(frozen=True)
class Banners:
    policy: Policy
    kill_switch: bool
    saving: str = ""  # why the assistant cannot save, when it can still read

    @property
    def policy_message(self) -> str:
        if self.policy.memory_mode == "off":
            return gettext(
                "%(organization)s has turned memory off: the assistant reads and saves nothing."
            ) % {"organization": self.policy.organization_name}
        if self.policy.memory_mode == "read_only":
            return gettext(
                "%(organization)s made memory read-only: "
                "the assistant reads your notes but cannot save new ones."
            ) % {"organization": self.policy.organization_name}
        return ""


def saving_off_reason(user: User, policy: Policy) -> str:
    """Why the assistant may read notes but not save any, else "" (M9, M16).

    Only the cases the memory-off banner does not already cover: memory that is off
    altogether says so itself.
    """
    if policy.memory_mode == "read_only":
        return gettext(
            "%(organization)s made memory read-only: the assistant reads your notes "
            "but cannot save or propose new ones."
        ) % {"organization": policy.organization_name}
    # One query for the stored choice: only "never" matters here, and an unreadable value
    # means "ask" (save_mode_for), which saves nothing unasked either.
    stored = (
        AddonSetting.objects.filter(user=user, addon=MEMORY_ADDON, key=SAVE_MODE)
        .values_list("value", flat=True)
        .first()
    )
    if stored == "never":
        return gettext(
            "You chose Never on the Short memory page: the assistant reads your notes "
            "but cannot save or propose new ones."
        )
    return ""


def banners_for(user: User) -> Banners:
    policy = policy_for(user)
    return Banners(
        policy=policy, kill_switch=kill_switch_on(), saving=saving_off_reason(user, policy)
    )


@dataclass(frozen=True)
class NoteMatch:
    scope: MemoryScope
    folder: str
    text: str


def notes_matching(user: User, query: str, limit: int = 100) -> list[NoteMatch]:
    """The person's notes, in every memory they manage here, that contain the query."""
    needle = query.casefold()
    scopes = {
        scope.pk: scope for scope in scopes_for_user(user).exclude(kind=MemoryScope.Kind.PROJECT)
    }
    matches = []
    for index in MemoryFile.objects.filter(scope_id__in=scopes, path__endswith="index.md"):
        scope = scopes[index.scope_id]
        if index.path != index_path(scope):
            continue
        for item in entries.send_order(entries.parse_items(index.content)):
            if needle in item.text.casefold():
                matches.append(NoteMatch(scope, scope_folder(scope), item.text))
    return matches[:limit]


# What apps above memory list in the Inbox besides proposals (the chat's questions, M19;
# learning's triage cards, M20):
# each registers a renderer from its ready(), so memory never reads their tables.
InboxSection = Callable[[HttpRequest, User], str]
_inbox_sections: list[InboxSection] = []


def inbox_section_register(section: InboxSection) -> None:
    if section not in _inbox_sections:
        _inbox_sections.append(section)


def inbox_sections(request: HttpRequest, user: User) -> list[SafeString]:
    """The registered sections' HTML (trusted: rendered from their templates)."""
    return [mark_safe(html) for section in _inbox_sections if (html := section(request, user))]  # noqa: S308
