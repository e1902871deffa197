"""Files the host keeps (uploads, exports) go through Django's storage API.

`make run` keeps them in local folders under DATA_DIR; a deployment with several hosts
sets STORAGE_BACKEND=s3 and they live on an S3-compatible server (django-storages).
Uploaded documents are read by the folder scanner, which opens files through verified
folder handles: with a remote storage, a job first copies the source's files into a
local working folder and scans that, so the same safe-open checks apply.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, Storage, storages
from django.http import Http404, HttpResponse
from django.utils.http import content_disposition_header

EXPORTS = "exports"


def uploads() -> Storage:
    return storages["default"]


def exports() -> Storage:
    return storages[EXPORTS]


def local_folder(storage: Storage) -> Path | None:
    """The folder a local storage writes to; None for a remote one."""
    if isinstance(storage, FileSystemStorage):
        return Path(storage.location).resolve()
    return None


def _files(storage: Storage, prefix: str) -> list[str]:
    """Every file name below `prefix`, recursively."""
    try:
        folders, files = storage.listdir(prefix)
    except FileNotFoundError:
        return []
    names = [str(PurePosixPath(prefix) / name) for name in files]
    for folder in folders:
        names += _files(storage, str(PurePosixPath(prefix) / folder))
    return names


def local_remove(path: Path) -> None:
    """A local folder with all in it, or one file; what is gone already is no error."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def tree_delete(storage: Storage, prefix: str) -> None:
    for name in _files(storage, prefix):
        storage.delete(name)


def tree_size(storage: Storage, prefix: str) -> int:
    return sum(storage.size(name) for name in _files(storage, prefix))


def tree_download(storage: Storage, prefix: str, folder: Path) -> None:
    """Copy the flat folder `prefix` into a new local `folder` (replacing what was there)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name in _files(storage, prefix):
        relative = PurePosixPath(name).relative_to(prefix)
        if len(relative.parts) != 1 or relative.name.startswith("."):
            continue  # uploads are flat, and never dot files: anything else is not ours
        with storage.open(name, "rb") as source, (folder / relative.name).open("xb") as target:
            shutil.copyfileobj(source, target)


def exports_folder(user_id: int) -> str:
    return f"user-{user_id}"


def export_response(
    *,
    user_id: int,
    kind: str,
    filename: str,
    data: bytes,
    content_type: str,
    still_there: Callable[[], bool] = lambda: True,
) -> HttpResponse:
    """Keep the export in the exports storage (only the newest per person and kind) and
    answer with the stored copy as a download. Exports are small (a memory export is at
    most a few MiB), so the answer is read whole.

    A delete of what was exported (the person, or `still_there`: the conversation) may
    commit while the export is written, and its sweep (host/leftovers.py) may have run
    before the file existed. So the rows are checked once the file is kept: gone, the
    file goes and the answer is 404; there, a delete still to commit sweeps the file."""
    storage = exports()
    folder = exports_folder(user_id)
    for old in _files(storage, folder):
        if PurePosixPath(old).name.startswith(f"{kind}-"):
            storage.delete(old)
    name = storage.save(f"{folder}/{kind}-{uuid.uuid4().hex}", ContentFile(data))
    if not (get_user_model().objects.filter(pk=user_id).exists() and still_there()):
        storage.delete(name)
        raise Http404
    with storage.open(name, "rb") as stored:
        response = HttpResponse(stored.read(), content_type=content_type)
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response
