"""The model client's calls are bounded as a whole by the transport, headers included.

A raw-socket server trickles its headers or streams one line without a newline; the
round ends with a clear error and reads no more than its caps.
"""

from __future__ import annotations

import pytest

from host import model_client as client
from tests.hostile_server import HostileServer

MIB = 1024 * 1024


def _round(server: HostileServer, **bounds: float | int) -> client.RoundResult:
    options: dict[str, float | int] = {"connect_timeout": 0.2, "read_timeout": 0.3, **bounds}
    endpoint = client.Endpoint(
        base_url=server.base_url,
        model="any",
        max_retries=0,
        **options,  # type: ignore[arg-type]
    )
    return client.stream_round(
        endpoint,
        messages=[{"role": "user", "content": "hi"}],
        tools=None,
        on_delta=lambda text: None,
        should_stop=lambda: False,
    )


@pytest.mark.parametrize("hostile_server", ["slow_headers"], indirect=True)
def test_a_model_trickling_its_headers_ends_at_the_headers_deadline(hostile_server):
    with pytest.raises(client.ModelError) as failure:
        _round(hostile_server)
    assert failure.value.kind == "timeout"
    assert hostile_server.sent < 50  # a byte every 0.1 s, for the 0.5 s connect + read allow


@pytest.mark.parametrize("hostile_server", ["endless_line"], indirect=True)
def test_one_endless_line_in_a_model_stream_is_cut_at_the_line_cap(hostile_server):
    with pytest.raises(client.ModelError, match="longer than 1,048,576 bytes") as failure:
        _round(hostile_server, max_line_bytes=MIB, read_timeout=30)
    assert failure.value.kind == "malformed"
    assert b"accept-encoding: identity" in hostile_server.requests[0].lower()  # counted = decoded
    hostile_server.gave_up.wait(30)
    assert hostile_server.sent < MIB + 8 * MIB  # the line cap plus the sockets' buffers, not 300 MB


@pytest.mark.parametrize("hostile_server", ["endless_line"], indirect=True)
def test_a_model_stream_without_end_is_cut_at_the_reply_cap(hostile_server):
    with pytest.raises(client.ModelError, match="larger than 2,097,152 bytes"):
        _round(hostile_server, max_reply_bytes=2 * MIB, read_timeout=30)
