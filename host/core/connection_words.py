"""Plain words for why a connection to another server failed, instead of an exception's
class name (people read "it refused the connection", not "ConnectError")."""

from __future__ import annotations

import ssl


def _(text: str) -> str:
    """Marks the words for the catalogue, as gettext_noop does (a core imports no Django)."""
    return text


def connection_failure_words(error: BaseException | None) -> str:
    """What went wrong, in a few words that fit after "is unreachable (…)". In English
    (model errors are stored in English); a page translates them with gettext."""
    seen: set[int] = set()
    texts: list[str] = []
    kinds: list[BaseException] = []
    while error is not None and id(error) not in seen:  # the cause chain, bounded
        seen.add(id(error))
        kinds.append(error)
        texts.append(str(error).lower())
        error = error.__cause__ or error.__context__
    text = " ".join(texts)
    if not kinds:
        return _("no connection")
    if any(isinstance(kind, ssl.SSLError) for kind in kinds) or "certificate" in text:
        return _("its certificate was not accepted")
    if (
        "name or service not known" in text
        or "nodename nor servname" in text
        or ("getaddrinfo" in text or "name resolution" in text)
    ):
        return _("its address could not be found")
    if any(isinstance(kind, ConnectionRefusedError) for kind in kinds) or "refused" in text:
        return _("it refused the connection")
    if any(isinstance(kind, ConnectionResetError) for kind in kinds) or "reset" in text:
        return _("the connection was cut off")
    if any(isinstance(kind, TimeoutError) for kind in kinds) or "timed out" in text:
        return _("it did not answer in time")
    return _("the connection failed")
