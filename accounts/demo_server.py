"""The offline demo model's OpenAI-compatible server (B8): llama.cpp's own C++ server
through xllamacpp's prebuilt wheel, so nothing is compiled, with the chat template stored
in the model file. Run as `python -m accounts.demo_server MODEL --port N --alias NAME`;
it prints one line starting with READY once it listens, and serves until stopped.

No Django here: it runs beside the site as its own process."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading

READY = "READY"
# Small models answer best without sampling noise; the benchmark asked at temperature 0 too.
DEFAULT_TEMPERATURE = 0.0
# The answer's length when a request names none: a tiny model that runs on repeats itself,
# and a long answer holds a slot that another person's chat waits for.
DEFAULT_MAX_TOKENS = 256
# Answers written at once (llama.cpp's slots); each slot has the whole context window.
PARALLEL = 4


# How long llama.cpp may take to stop its threads before the process just ends.
STOP_SECONDS = 5


def _stop_with_parent() -> None:
    """On Linux the server goes when whoever started it goes (a killed test run, say), so
    no model is left holding a port. SIGKILL: nothing is lost, and a SIGTERM that the
    kernel handed to one of llama.cpp's threads was seen to leave the server running."""
    if sys.platform != "linux":
        return
    import ctypes

    pr_set_pdeathsig = 1
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("model", help="the GGUF file")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--alias", required=True, help="the model name clients ask for")
    parser.add_argument("--context", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=min(4, os.cpu_count() or 1))
    options = parser.parse_args(argv)
    _stop_with_parent()

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = options.model
    params.model_alias = options.alias
    params.n_parallel = PARALLEL
    params.n_ctx = options.context * PARALLEL
    params.n_predict = DEFAULT_MAX_TOKENS
    params.hostnames = ["127.0.0.1"]
    params.port = options.port
    params.use_jinja = True  # the model file's own chat template
    params.cpuparams.n_threads = options.threads
    params.cpuparams_batch.n_threads = options.threads
    params.sampling.temp = DEFAULT_TEMPERATURE
    server = xllamacpp.Server(params)
    print(f"{READY} {server.listening_address}", flush=True)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    with contextlib.suppress(KeyboardInterrupt):
        # Woken each second: Python runs a signal's handler in the main thread only, and
        # a signal that reached another thread waits for the main thread to wake.
        while not stopped.wait(1):
            pass
    # The stop is bounded: on busy cores llama.cpp's threads were seen not to end. The
    # kernel's alarm ends the process; a Python timer needs the GIL, which the server's
    # teardown was seen to hold (the process outlived its starter by more than 30 s).
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(STOP_SECONDS)
    del server  # stops llama.cpp's threads before the interpreter goes


if __name__ == "__main__":
    main()
