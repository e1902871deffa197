"""Test connection: ask an AI profile's server which models it serves (GET /v1/models).

Called from a page while the person waits, so it is bounded (connect 5 s, whole call
10 s), checks the address under the admin's outbound rules first and never holds a
database connection while the server answers.
"""

from __future__ import annotations

import json

import httpx
from django.utils.translation import gettext as _

from host.core.connection_words import connection_failure_words
from host.outbound import (
    BodyTooLarge,
    OutboundRefused,
    check_outbound_url,
    read_bounded,
    release_db_connection,
)

TIMEOUT = httpx.Timeout(10.0, connect=5.0)
# httpx's timeouts bound each read, not the call: a server sending a byte every few
# seconds would hold the page (and a web worker) for ever, so the whole read has a
# limit too, and so has the size of the list.
TOTAL_SECONDS = 10.0
MAX_BYTES = 1024 * 1024
MAX_MODELS = 200


class ConnectionProblem(Exception):
    """The server could not be reached or did not answer like an OpenAI-compatible one."""


def server_models(*, base_url: str, api_key: str = "") -> list[str]:
    """The model ids the server at `base_url` lists, sorted; ConnectionProblem says why not."""
    url = base_url.strip().rstrip("/")
    try:
        check_outbound_url(url)
    except OutboundRefused as refusal:
        raise ConnectionProblem(str(refusal)) from None
    release_db_connection()
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        status, body = read_bounded(
            "GET",
            f"{url}/models",
            headers=headers,
            timeout=TIMEOUT,
            total_seconds=TOTAL_SECONDS,
            max_bytes=MAX_BYTES,
        )
    except OutboundRefused as refusal:  # its name resolved elsewhere by now
        raise ConnectionProblem(str(refusal)) from None
    except BodyTooLarge:
        raise ConnectionProblem(
            _("The server's list of models is larger than %(size)s KiB; it was not read.")
            % {"size": MAX_BYTES // 1024}
        ) from None
    except httpx.TimeoutException:
        raise ConnectionProblem(
            _("The server at %(url)s did not answer within %(seconds)s seconds.")
            % {"url": url, "seconds": f"{TOTAL_SECONDS:g}"}
        ) from None
    except httpx.HTTPError as error:
        raise ConnectionProblem(
            _("The server at %(url)s cannot be reached (%(error)s).")
            % {"url": url, "error": _(connection_failure_words(error))}
        ) from None
    if status in (401, 403):
        raise ConnectionProblem(
            _("The server refused the API key (HTTP %(status)s).") % {"status": status}
        )
    if status != 200:
        raise ConnectionProblem(
            _("The server answered HTTP %(status)s to GET %(url)s/models.")
            % {"status": status, "url": url}
        )
    try:
        data = json.loads(body).get("data", [])
        ids = [str(item["id"]) for item in data if isinstance(item, dict) and item.get("id")]
    except (ValueError, AttributeError, TypeError, RecursionError):
        raise ConnectionProblem(
            _("The server answered, but not with an OpenAI-compatible list of models.")
        ) from None
    return sorted(set(ids))[:MAX_MODELS]
