"""Every outside call is bounded as a whole, headers included (host/bounded_http.py).

Against a raw-socket server that trickles its headers or sends one endless line: the call
ends with a clear error, and what it read stays within the caps (asserted on bytes).
"""

from __future__ import annotations

import httpx
import pytest

from host.bounded_http import BodyTooLarge, LineTooLong, bounded_call
from host.outbound import read_bounded, shared_http_client

MIB = 1024 * 1024


@pytest.mark.parametrize("hostile_server", ["slow_headers"], indirect=True)
def test_headers_sent_a_byte_at_a_time_end_the_call_at_its_deadline(hostile_server):
    with pytest.raises(httpx.ReadTimeout, match=r"whole call took longer than 0\.5 s"):
        read_bounded("GET", hostile_server.base_url, timeout=5, total_seconds=0.5, max_bytes=MIB)
    # Per-read timeouts alone (5 s each) would have waited for ever; ~5 bytes came in.
    assert hostile_server.sent < 50


@pytest.mark.parametrize("hostile_server", ["slow_headers"], indirect=True)
def test_the_headers_have_their_own_shorter_deadline(hostile_server):
    with (
        pytest.raises(httpx.ReadTimeout),
        bounded_call(total_seconds=60, headers_seconds=0.3, max_bytes=MIB) as budget,
        shared_http_client().stream("GET", hostile_server.base_url, timeout=5),
    ):
        pass
    assert budget.body_bytes == 0 and hostile_server.sent < 50


@pytest.mark.parametrize("hostile_server", ["endless_line"], indirect=True)
def test_one_endless_line_is_cut_at_the_line_cap(hostile_server):
    with (
        pytest.raises(LineTooLong, match="longer than 1,048,576 bytes"),
        bounded_call(total_seconds=60, max_bytes=64 * MIB, max_line_bytes=MIB) as budget,
        shared_http_client().stream("GET", hostile_server.base_url, timeout=5) as answer,
    ):
        for _ in answer.iter_bytes():
            pass
    assert MIB < budget.body_bytes <= MIB + 65536 + 6


@pytest.mark.parametrize("hostile_server", ["endless_line"], indirect=True)
def test_an_endless_answer_is_cut_at_the_reply_cap(hostile_server):
    with pytest.raises(BodyTooLarge, match="larger than 2,097,152 bytes"):
        read_bounded("GET", hostile_server.base_url, timeout=5, total_seconds=60, max_bytes=2 * MIB)
    assert hostile_server.sent < 2 * MIB + 8 * MIB  # what the client read plus the sockets' buffers


@pytest.mark.parametrize("hostile_server", ["endless_line"], indirect=True)
def test_outside_calls_ask_for_an_uncompressed_answer(hostile_server):
    with pytest.raises(BodyTooLarge):
        read_bounded("GET", hostile_server.base_url, timeout=5, total_seconds=60, max_bytes=1024)
    assert b"accept-encoding: identity" in hostile_server.requests[0].lower()


def test_a_call_outside_bounded_call_is_refused_before_it_connects():
    with pytest.raises(RuntimeError, match="bounded_call"):
        shared_http_client().get("http://127.0.0.1:9/", timeout=1)
