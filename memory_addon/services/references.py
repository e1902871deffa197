"""Approved reference files (M14): add (upload or admin-allowed folder), approve, send.

A file is sent only while the digest of its bytes equals the approved digest: a file
on disk that changed goes back to "needs approval" by itself, with nothing to update.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from accounts.models import User
from host.core.secret_guard import find_secret
from host.errors import ChangeRefused, LimitExceeded, SecretRefused, StaleBase
from host.secret_text import secret_refusal
from host.stored_secrets import stored_secrets
from knowledge.core import scanning
from knowledge.core.extract import Unreadable
from knowledge.services import granted_folders
from memory_addon.core import reference
from memory_addon.models import ReferenceFile
from memory_addon.services.policy import Policy, kill_switch_on, policy_for

MAX_FILES_PER_PERSON = 20


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _decode(data: bytes, name: str) -> str:
    if len(data) > settings.REFERENCE_READ_MAX_BYTES:
        raise LimitExceeded(
            f"{name} is {len(data):,} bytes; a reference file is read only up to "
            f"{settings.REFERENCE_READ_MAX_BYTES:,} bytes."
        )
    if b"\x00" in data:
        raise ChangeRefused(
            gettext("%(name)s holds NUL bytes; it is not a text file.") % {"name": name}
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ChangeRefused(
            gettext("%(name)s is not valid UTF-8 (byte %(start)s).")
            % {"name": name, "start": error.start}
        ) from None


def _refuse_secret(text: str, name: str, user_id: int) -> None:
    finding = find_secret(text, known=stored_secrets(user_id))
    if finding:
        raise SecretRefused(
            f"{name}: {secret_refusal(finding)}", line=finding.line, kind=finding.kind
        )


def reference_off_reason(user: User, policy: Policy | None = None) -> str:
    if kill_switch_on():
        return "Memory is off on this server (MEMORY_AI_MEMORY=off); no reference file is sent."
    policy = policy or policy_for(user)
    if not policy.reference_files:
        return f"{policy.organization_name or 'Your organization'} has turned reference files off."
    if policy.memory_mode == "off":
        return "Your organization has turned memory off; no reference file is sent."
    return ""


def _check_count(user: User) -> None:
    if ReferenceFile.objects.filter(owner=user).count() >= MAX_FILES_PER_PERSON:
        raise LimitExceeded(
            f"You have {MAX_FILES_PER_PERSON} reference files; remove one before adding another."
        )


def reference_upload(*, user: User, name: str, data: bytes) -> ReferenceFile:
    """An uploaded rule file; it waits for approval until the person approved its text."""
    name = name.strip()
    problem = reference.name_problem(name)
    if problem:
        raise ChangeRefused(problem)
    text = _decode(data, name)
    _refuse_secret(text, name, user.pk)
    with transaction.atomic(durable=True):
        _check_count(user)
        return ReferenceFile.objects.create(
            owner=user,
            name=name,
            tool=reference.tool_for(name),
            origin=ReferenceFile.Origin.UPLOAD,
            content=text,
        )


def _grant_for(user: User, path: Path) -> Path:
    for folder in granted_folders(user):
        if path.is_relative_to(folder) and path != folder:
            return folder
    raise ChangeRefused(
        "This file is not inside a folder an admin allowed for you. Upload it instead, or "
        "ask an admin to grant its folder."
    )


def _read_folder_file(user: User, raw_path: str) -> bytes:
    """Read a file below a granted folder, never following a link, at most the read cap."""
    problem = scanning.folder_path_problem(raw_path)
    if problem:
        raise ChangeRefused(problem.replace("folder path", "file path"))
    path = Path(raw_path.strip())
    if not path.is_absolute() or ".." in path.parts:
        raise ChangeRefused(gettext("Give the full path of the file on the server, without '..'."))
    folder = _grant_for(user, path)
    try:
        root = scanning.open_folder(folder)
        try:
            fd = scanning.open_below(root, path.relative_to(folder).as_posix())
            try:
                return scanning.read_fd(fd, limit=settings.REFERENCE_READ_MAX_BYTES)
            finally:
                os.close(fd)
        finally:
            os.close(root)
    except scanning.UnsafePath:
        raise ChangeRefused(
            "The path goes through a symbolic link; links are never followed."
        ) from None
    except Unreadable as error:
        raise LimitExceeded(
            gettext("%(name)s cannot be read: %(error)s.") % {"name": path.name, "error": error}
        ) from None
    except FileNotFoundError:
        raise ChangeRefused(gettext("There is no file at %(path)s.") % {"path": path}) from None
    except OSError as error:
        raise ChangeRefused(
            gettext("%(path)s cannot be opened (%(strerror)s).")
            % {"path": path, "strerror": error.strerror}
        ) from None


def reference_add_folder_file(*, user: User, path: str) -> ReferenceFile:
    data = _read_folder_file(user, path)
    name = Path(path.strip()).name
    problem = reference.name_problem(path.strip())
    if problem:
        raise ChangeRefused(problem)
    _refuse_secret(_decode(data, name), name, user.pk)
    with transaction.atomic(durable=True):
        _check_count(user)
        existing = ReferenceFile.objects.filter(
            owner=user, origin=ReferenceFile.Origin.FOLDER, path=path.strip()
        ).first()
        if existing:
            return existing
        return ReferenceFile.objects.create(
            owner=user,
            name=name,
            tool=reference.tool_for(path.strip()),
            origin=ReferenceFile.Origin.FOLDER,
            path=path.strip(),
        )


def reference_bytes(ref: ReferenceFile) -> bytes:
    if ref.origin == ReferenceFile.Origin.UPLOAD:
        return ref.content.encode("utf-8")
    return _read_folder_file(ref.owner, ref.path)


@dataclass(frozen=True)
class Review:
    """What the approval page shows: the full cleaned text and its digest."""

    ref: ReferenceFile
    text: str
    sha256: str
    removed: int
    marked: int
    status: str  # approved / needs approval / changed / unreadable
    problem: str = ""
    secret_line: int | None = None


def reference_review(ref: ReferenceFile) -> Review:
    try:
        data = reference_bytes(ref)
        text = _decode(data, ref.name)
    except ChangeRefused as refusal:
        return Review(ref, "", "", 0, 0, "unreadable", refusal.message)
    cleaned = reference.clean(text)
    sha = digest(data)
    if ref.approved_sha256 and ref.approved_sha256 == sha:
        status = "approved"
    elif ref.approved_sha256:
        status = "changed"
    else:
        status = "needs approval"
    finding = find_secret(text, known=stored_secrets(ref.owner_id))
    return Review(
        ref,
        cleaned.text,
        sha,
        cleaned.removed,
        cleaned.marked,
        status,
        secret_refusal(finding) if finding else "",
        finding.line if finding else None,
    )


def reference_approve(*, user: User, ref: ReferenceFile, sha256: str) -> ReferenceFile:
    """Approve exactly the text that was shown (its digest), unless it holds a secret."""
    data = reference_bytes(ref)
    if digest(data) != sha256:
        raise StaleBase(
            f"{ref.name} changed since it was shown to you; nothing was approved. "
            "Look at the new text and approve again."
        )
    _refuse_secret(_decode(data, ref.name), ref.name, user.pk)
    with transaction.atomic(durable=True):
        ReferenceFile.objects.filter(pk=ref.pk, owner=user).update(
            approved_sha256=sha256, approved_at=timezone.now()
        )
    ref.refresh_from_db()
    return ref


def reference_set_send(*, user: User, ref: ReferenceFile, send: bool) -> None:
    ReferenceFile.objects.filter(pk=ref.pk, owner=user).update(send=send)


def reference_remove(*, user: User, ref: ReferenceFile) -> None:
    """Forget the file here; a folder file on disk is never touched."""
    ReferenceFile.objects.filter(pk=ref.pk, owner=user).delete()


@dataclass
class ReferenceBlock:
    block: str = ""
    files: list[dict[str, Any]] = field(default_factory=list)
    not_sent: list[dict[str, str]] = field(default_factory=list)
    off: str = ""

    def sent_along(self) -> dict[str, Any]:
        return {"files": self.files, "not_sent": self.not_sent, "off": self.off}


CLIENT_READS_OWN = (
    "This client reads its own rule files (its API token says so), so your reference files "
    "are left out of its context."
)


def reference_block_build(
    *,
    user: User,
    memory_off_reason: str = "",
    mask: bool = True,
    client_reads_own: bool = False,
    policy: Policy | None = None,
) -> ReferenceBlock:
    """The reference block of one turn: approved, unchanged files only, within the caps.

    Every path that sends reference files (chat, REST turn context, MCP) comes here.
    mask=False only for a model that runs on this machine; client_reads_own for a
    client whose token says it loads the rule files itself (nothing is read then)."""
    if client_reads_own:
        return ReferenceBlock(off=memory_off_reason or CLIENT_READS_OWN)
    if policy is not None and not policy.has_reference_files:
        return ReferenceBlock()
    refs = list(ReferenceFile.objects.filter(owner=user, send=True).order_by("name", "id"))
    if not refs:
        return ReferenceBlock()
    off = memory_off_reason or reference_off_reason(user, policy)
    if off:
        return ReferenceBlock(off=off)
    texts: list[tuple[str, str]] = []
    not_sent: list[dict[str, str]] = []
    for ref in refs:
        if not ref.approved_sha256:
            not_sent.append({"name": ref.name, "why": "needs approval"})
            continue
        try:
            data = reference_bytes(ref)
        except ChangeRefused:
            not_sent.append({"name": ref.name, "why": "cannot be read"})
            continue
        if digest(data) != ref.approved_sha256:
            not_sent.append({"name": ref.name, "why": "changed since approval"})
            continue
        texts.append((ref.name, reference.clean(data.decode("utf-8", errors="replace")).text))
    sent, skipped = reference.pack(
        texts,
        max_tokens=settings.REFERENCE_MAX_TOKENS,
        per_file_bytes=settings.REFERENCE_FILE_MAX_BYTES,
    )
    not_sent += [{"name": name, "why": "no room left in the reference cap"} for name in skipped]
    return ReferenceBlock(
        block=reference.render(sent, mask=mask),
        files=[{"name": p.name, "tokens": p.tokens, "cut": p.cut} for p in sent],
        not_sent=not_sent,
    )
