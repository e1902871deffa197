"""Server folders: which ones a person may index (K2) and the checks on a new folder source."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.db.models import Q
from django.utils.translation import gettext as _

from accounts.models import Membership, User
from knowledge.core import scanning
from knowledge.errors import KnowledgeRefusal
from knowledge.models import FolderGrant, Source, Store


def allowed_roots() -> list[Path]:
    return [Path(root).resolve() for root in settings.KNOWLEDGE_ALLOWED_ROOTS]


def granted_folders(user: User) -> list[Path]:
    """The server folders this person may index: grants to them or their organization (K2).

    Superusers may use every allowed root; everyone else only what an admin granted, and
    never more than the allowed roots (a grant outside them counts for nothing).
    """
    roots = allowed_roots()
    if user.is_superuser:
        return roots
    organizations = Membership.objects.filter(user=user).values("organization")
    grants = FolderGrant.objects.filter(Q(user=user) | Q(organization__in=organizations))
    folders = {Path(grant.path) for grant in grants}
    return sorted(
        folder
        for folder in folders
        if folder.is_absolute()
        and ".." not in folder.parts
        and any(folder == root or folder.is_relative_to(root) for root in roots)
    )


def _check_granted(owner: User, path: Path) -> None:
    folders = granted_folders(owner)
    if any(path == folder or path.is_relative_to(folder) for folder in folders):
        return
    if owner.is_superuser:
        where = ", ".join(str(r) for r in folders) or "none yet"
        raise KnowledgeRefusal(
            f"{path} is outside the folders an admin allowed (KNOWLEDGE_ALLOWED_ROOTS: {where})."
        )
    if not folders:
        raise KnowledgeRefusal(
            "No server folder has been granted to you yet. An admin grants folders to people "
            "or organizations (Admin → Knowledge → Folder grants); until then you can upload files."
        )
    raise KnowledgeRefusal(
        f"{path} is outside the folders you may index: "
        + ", ".join(str(folder) for folder in folders)
        + ". Ask an admin to grant another folder."
    )


def _check_folder(raw: str, owner: User) -> Path:
    problem = scanning.folder_path_problem(raw)
    if problem:
        raise KnowledgeRefusal(problem)
    path = Path(raw.strip())
    # '..' first: "../docs" is refused for its '..', which is what the person must change.
    if ".." in path.parts:
        raise KnowledgeRefusal(_("Give the plain path of the folder, without '..'."))
    if not path.is_absolute():
        raise KnowledgeRefusal(
            _("Give the full path of the folder on the server, starting with /.")
        )
    # The grant comes first: a person learns nothing about folders they may not use.
    _check_granted(owner, path)
    try:
        os.close(scanning.open_folder(path))
    except scanning.UnsafePath:
        raise KnowledgeRefusal(
            "The folder path goes through a symbolic link; links are never followed."
        ) from None
    except FileNotFoundError:
        raise KnowledgeRefusal(_("There is no folder at %(path)s.") % {"path": path}) from None
    except NotADirectoryError:
        raise KnowledgeRefusal(_("%(path)s is a file, not a folder.") % {"path": path}) from None
    except OSError as error:
        raise KnowledgeRefusal(
            _("%(path)s cannot be opened (%(strerror)s).")
            % {"path": path, "strerror": error.strerror}
        ) from None
    return path


def _check_overlap(store: Store, path: Path) -> None:
    for existing in store.sources.filter(kind=Source.Kind.FOLDER):
        other = Path(existing.path)
        if path == other:
            raise KnowledgeRefusal(
                _("This folder is already a source: %(other)s.") % {"other": other}
            )
        if path.is_relative_to(other):
            raise KnowledgeRefusal(
                _("This folder is already covered by the source %(other)s.") % {"other": other}
            )
        if other.is_relative_to(path):
            raise KnowledgeRefusal(
                f"This folder contains the existing source {other}; remove that one first."
            )
