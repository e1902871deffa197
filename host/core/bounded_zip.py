"""Zip archives people upload (memory exports, add-on packages), read within bounds.

Entries are read in small chunks and cut off past their declared size or the caller's
limit, so a bomb or a lying header stops early. Every way an archive can fail comes
out as one ZipRefused with a `kind`; callers word the refusal for their page.
"""

from __future__ import annotations

import io
import lzma
import zipfile
import zlib
from typing import Literal

READ_CHUNK = 16 * 1024
# What zipfile and its decompressors raise for a damaged or hostile entry.
DAMAGED = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    EOFError,
    OSError,
    ValueError,
    zlib.error,
    lzma.LZMAError,
)

Kind = Literal["not_zip", "encrypted", "oversize", "compression", "damaged"]


class ZipRefused(Exception):
    def __init__(self, kind: Kind, name: str = "", detail: str = "") -> None:
        super().__init__(kind)
        self.kind = kind
        self.name = name
        self.detail = detail


def open_zip(data: bytes) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (*DAMAGED, NotImplementedError, RuntimeError):
        raise ZipRefused("not_zip") from None


def read_entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """The entry's bytes, never more than it declares nor more than `limit`."""
    name = info.filename
    if info.flag_bits & 0x1:
        raise ZipRefused("encrypted", name)
    parts: list[bytes] = []
    size = 0
    try:
        with archive.open(info) as handle:
            while block := handle.read(READ_CHUNK):
                size += len(block)
                if size > min(info.file_size, limit):
                    raise ZipRefused("oversize", name)
                parts.append(block)
    except NotImplementedError:  # a compression method zipfile cannot read
        raise ZipRefused("compression", name) from None
    except RuntimeError:  # zipfile's "password required"
        raise ZipRefused("encrypted", name) from None
    except DAMAGED as error:
        raise ZipRefused("damaged", name, str(error)[:120] or type(error).__name__) from None
    return b"".join(parts)
