"""A webhook receiver that trickles its headers cannot hold a delivery (bridges/outgoing.py)."""

from __future__ import annotations

import pytest

from bridges.outgoing import post_signed


@pytest.mark.django_db
def test_a_receiver_trickling_its_headers_fails_the_attempt_at_the_whole_call_limit(
    slow_headers, settings
):
    settings.WEBHOOK_ALLOW_LOOPBACK = True
    settings.WEBHOOK_CONNECT_TIMEOUT_SECONDS = 0.2
    settings.WEBHOOK_READ_TIMEOUT_SECONDS = 0.3
    result = post_signed(slow_headers.base_url, secret="whsec_" + "a" * 32, msg_id="m1", body=b"{}")
    assert not result.ok and result.retryable
    assert result.error == "The server did not answer in time."
    assert slow_headers.sent < 50
