"""host/lazy_module.py: a module loads on first use, whole, for every thread at once."""

from __future__ import annotations

import sys
import threading

from host.lazy_module import lazy_module


def test_a_lazy_module_loads_on_first_use_and_whole_for_threads_reading_at_once(
    tmp_path, monkeypatch
):
    # Its body takes a while, so threads arrive while it is still loading.
    (tmp_path / "slow_to_load.py").write_text("total = sum(range(2_000_000))\nready = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "slow_to_load", raising=False)
    module = lazy_module("slow_to_load")
    assert "slow_to_load" not in sys.modules

    start = threading.Barrier(16)
    seen: list[tuple[int, bool]] = []

    def read() -> None:
        start.wait()
        seen.append((module.total, module.ready))

    threads = [threading.Thread(target=read) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [(sum(range(2_000_000)), True)] * 16
    assert "slow_to_load" in sys.modules
