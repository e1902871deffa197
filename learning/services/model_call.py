"""The one bounded model call learning makes (rule detection, clean-up): no tools, no
retries, one time limit for all of it, and no database connection held meanwhile."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings

from accounts.models import AIProfile
from host import model_client as client
from host.outbound import check_outbound_url, release_db_connection
from host.stored_secrets import stored_secrets


def model_call_once(
    *, profile: AIProfile, messages: list[dict[str, Any]], limit: float
) -> tuple[client.RoundResult, float]:
    """The model's answer and the seconds the call took; a call past `limit` is stopped
    (result.stopped). Raises ModelError, or OutboundRefused for a refused address."""
    endpoint = client.Endpoint(
        base_url=profile.base_url,
        model=profile.model,
        api_key=profile.api_key,
        connect_timeout=min(float(settings.CHAT_CONNECT_TIMEOUT_SECONDS), limit),
        read_timeout=limit,
        max_retries=0,
        # Masked by value too, as every chat turn is: the guard cannot know them by shape.
        known_secrets=stored_secrets(profile.owner_id),
    )
    release_db_connection()
    started = time.monotonic()
    check_outbound_url(endpoint.base_url)
    result = client.stream_round(
        endpoint,
        messages=messages,
        tools=None,
        on_delta=lambda _delta: None,
        should_stop=lambda: time.monotonic() - started > limit,
    )
    return result, time.monotonic() - started
