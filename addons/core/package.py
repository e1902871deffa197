"""Reading an add-on package: a zip upload or an installed distribution's folder.

Pure: no Django. Packages are untrusted: sizes are capped before and while
reading (a zip entry is inflated in small chunks and cut off at its declared size
and at the per-file cap, so a zip bomb costs one chunk), names are checked for
traversal, absolute paths, backslashes, control characters, symlinks and
case-insensitive duplicates, and only a short list of file types is accepted.
"""

from __future__ import annotations

import stat
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path, PurePosixPath

from addons.core.manifest import Manifest, ManifestError, manifest_parse
from host.core.bounded_zip import ZipRefused, open_zip, read_entry

MAX_PACKAGE_BYTES = 1024 * 1024  # the upload itself
MAX_FILES = 100
MAX_FILE_BYTES = 256 * 1024
MAX_TOTAL_BYTES = 2 * 1024 * 1024  # unpacked
MAX_CONTEXT_FILE_BYTES = 16 * 1024
ALLOWED_SUFFIXES = frozenset(
    {".json", ".md", ".txt", ".html", ".js", ".css", ".svg", ".png", ".woff2"}
)


class PackageRefused(ValueError):
    """The package cannot be installed; the message says why, for the person installing.
    ``problems`` lists each mistake on its own when there are several (a manifest's)."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or [message]


@dataclass(frozen=True)
class Package:
    manifest: Manifest
    files: dict[str, bytes] = field(default_factory=dict)  # package path -> bytes, no manifest

    @property
    def size(self) -> int:
        return sum(len(data) for data in self.files.values())


def too_large(size: int) -> str:
    """The refusal of an upload over the cap, with its size (rounded up, so never equal)."""
    return (
        f"The package is {(size + 1023) // 1024} KiB; "
        f"at most {MAX_PACKAGE_BYTES // 1024} KiB is allowed."
    )


def clean_name(name: str) -> str:
    """A safe relative POSIX path, or PackageRefused naming the entry."""
    shown = name[:120]
    if not name or len(name) > 200:
        raise PackageRefused(f"{shown!r}: a file name must be 1 to 200 characters.")
    if any(unicodedata.category(ch) in {"Cc", "Cf", "Cs"} for ch in name) or "\\" in name:
        raise PackageRefused(f"{shown!r}: control characters and backslashes are not allowed.")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise PackageRefused(f"{shown!r}: absolute paths are not allowed.")
    parts = PurePosixPath(name).parts
    if any(part in {"..", "."} for part in name.split("/")) or not parts:
        raise PackageRefused(f"{shown!r}: '..' and '.' are not allowed in a path.")
    return "/".join(parts)


def _check_suffix(path: str) -> None:
    suffix = PurePosixPath(path).suffix.lower()
    if suffix not in ALLOWED_SUFFIXES:
        allowed = " ".join(sorted(ALLOWED_SUFFIXES))
        raise PackageRefused(f"{path}: this file type is not allowed in a package ({allowed}).")


def _refusal(refused: ZipRefused) -> PackageRefused:
    name = refused.name[:120]
    return PackageRefused(
        {
            "not_zip": "This is not a zip file.",
            "encrypted": f"{name} is encrypted.",
            "oversize": f"{name} unpacks to more than it declares or allows.",
            "compression": f"{name} uses a compression method this host cannot read.",
            "damaged": f"The package is damaged ({refused.detail}).",
        }[refused.kind]
    )


def _assemble(entries: Iterator[tuple[str, bytes]]) -> Package:
    files: dict[str, bytes] = {}
    folded: set[str] = set()
    total = 0
    for raw_name, data in entries:
        path = clean_name(raw_name)
        if path.casefold() in folded:
            raise PackageRefused(f"{path}: two files have this name (ignoring case).")
        folded.add(path.casefold())
        _check_suffix(path)
        total += len(data)
        if total > MAX_TOTAL_BYTES:
            raise PackageRefused(f"The package unpacks to more than {MAX_TOTAL_BYTES // 1024} KiB.")
        files[path] = data
    raw_manifest = files.pop("manifest.json", None)
    if raw_manifest is None:
        raise PackageRefused("The package has no manifest.json at its top level.")
    try:
        manifest = manifest_parse(raw_manifest)
    except ManifestError as error:
        raise PackageRefused(
            f"manifest.json: {error}", [f"manifest.json: {p}" for p in error.problems]
        ) from None
    _check_references(manifest, files)
    return Package(manifest=manifest, files=files)


def _check_references(manifest: Manifest, files: dict[str, bytes]) -> None:
    """Every file the manifest names is in the package and readable as it must be."""
    for entry in manifest.capabilities.context_files:
        for path in manifest.context_file_variants(entry):
            data = files.get(path)
            if data is None:
                raise PackageRefused(f"capabilities.contextFiles: {path} is not in the package.")
            if len(data) > MAX_CONTEXT_FILE_BYTES:
                raise PackageRefused(
                    f"{path}: a context file holds at most {MAX_CONTEXT_FILE_BYTES // 1024} KiB."
                )
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise PackageRefused(f"{path}: a context file must be UTF-8 text.") from None
            unknown = manifest.template_fields(text)
            if unknown:
                declared = ", ".join(s.key for s in manifest.settings) or "none"
                raise PackageRefused(
                    f"{path}: {{{{{unknown[0]}}}}} names no declared setting "
                    f"(declared: {declared})."
                )
    for page in manifest.pages:
        if page.path not in files:
            raise PackageRefused(f"pages: {page.path} is not in the package.")


def package_from_zip(data: bytes) -> Package:
    """A checked package from an uploaded zip, or PackageRefused."""
    if len(data) > MAX_PACKAGE_BYTES:
        raise PackageRefused(too_large(len(data)))
    try:
        archive = open_zip(data)
    except ZipRefused as refused:
        raise _refusal(refused) from None
    with archive:
        infos = [info for info in archive.infolist() if not info.is_dir()]
        if len(infos) > MAX_FILES:
            raise PackageRefused(f"The package holds more than {MAX_FILES} files.")
        if sum(info.file_size for info in infos) > MAX_TOTAL_BYTES:
            raise PackageRefused(f"The package unpacks to more than {MAX_TOTAL_BYTES // 1024} KiB.")
        for info in infos:
            if stat.S_ISLNK(info.external_attr >> 16):
                raise PackageRefused(f"{info.filename[:120]}: links are not allowed.")
            if info.file_size > MAX_FILE_BYTES:
                raise PackageRefused(
                    f"{info.filename[:120]}: a file holds at most {MAX_FILE_BYTES // 1024} KiB."
                )
        try:
            return _assemble(
                (info.filename, read_entry(archive, info, MAX_FILE_BYTES)) for info in infos
            )
        except ZipRefused as refused:
            raise _refusal(refused) from None


def _walk(folder: Traversable, prefix: str = "") -> Iterator[tuple[str, Traversable]]:
    for child in sorted(folder.iterdir(), key=lambda item: item.name):
        name = f"{prefix}{child.name}"
        if child.name == "__pycache__" or child.name.endswith((".py", ".pyc", ".typed", ".d.ts")):
            continue  # the distribution's own code and the author's type stubs stay out
        if child.is_dir():
            yield from _walk(child, f"{name}/")
        else:
            yield name, child


def package_from_folder(folder: Traversable) -> Package:
    """A checked package from an installed distribution's package folder (entry points)."""
    count = 0

    def entries() -> Iterator[tuple[str, bytes]]:
        nonlocal count
        for name, item in _walk(folder):
            count += 1
            if count > MAX_FILES:
                raise PackageRefused(f"The package holds more than {MAX_FILES} files.")
            if isinstance(item, Path) and (
                item.is_symlink() or item.stat().st_size > MAX_FILE_BYTES
            ):
                raise PackageRefused(f"{name}: links and files over the size cap are not allowed.")
            data = item.read_bytes()
            if len(data) > MAX_FILE_BYTES:
                raise PackageRefused(f"{name}: a file holds at most {MAX_FILE_BYTES // 1024} KiB.")
            yield name, data

    return _assemble(entries())


def package_of_entry_point(ep: EntryPoint) -> Package:
    """The package an installed distribution offers: the folder of the module its entry point
    names (``module`` or ``module:attribute``; only the module part counts)."""
    module = ep.value.split(":", 1)[0].strip()
    try:
        folder = files(module)
    except (ImportError, TypeError, ValueError) as error:
        raise PackageRefused(f"{ep.name}: {module} cannot be found ({error}).") from None
    return package_from_folder(folder)
