"""Test connection: ask an AI profile's server which models it serves (GET /v1/models).

Called from a page while the person waits, so it is bounded (connect 5 s, whole call
10 s), checks the address under the admin's outbound rules first and never holds a
database connection while the server answers.
"""

from __future__ import annotations

import httpx
from django.utils.translation import gettext as _

from memory_addon.host.outbound import OutboundRefused, check_outbound_url, release_db_connection

TIMEOUT = httpx.Timeout(10.0, connect=5.0)
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
        response = httpx.get(f"{url}/models", headers=headers, timeout=TIMEOUT)
    except httpx.TimeoutException:
        raise ConnectionProblem(
            _("The server at %(url)s did not answer within 10 seconds.") % {"url": url}
        ) from None
    except httpx.HTTPError as error:
        raise ConnectionProblem(
            _("The server at %(url)s cannot be reached (%(error)s).")
            % {"url": url, "error": type(error).__name__}
        ) from None
    if response.status_code in (401, 403):
        raise ConnectionProblem(
            _("The server refused the API key (HTTP %(status)s).")
            % {"status": response.status_code}
        )
    if response.status_code != 200:
        raise ConnectionProblem(
            _("The server answered HTTP %(status)s to GET %(url)s/models.")
            % {"status": response.status_code, "url": url}
        )
    try:
        data = response.json().get("data", [])
        ids = [str(item["id"]) for item in data if isinstance(item, dict) and item.get("id")]
    except (ValueError, AttributeError, TypeError):
        raise ConnectionProblem(
            _("The server answered, but not with an OpenAI-compatible list of models.")
        ) from None
    return sorted(set(ids))[:MAX_MODELS]
