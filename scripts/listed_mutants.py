# ruff: noqa: E501  (each mutation is one source line, kept whole to be readable)
"""Issue 11, item 6: the single-line breakages a mutation run once left unnoticed.

Applies each one to the source, runs the tests that should notice it, restores the
file and prints KILLED or SURVIVED. Run from the repository root:

    .venv/bin/python scripts/listed_mutants.py [index ...]
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
M = [
    (
        "index 2 KiB cap removed",
        "memory_addon/services/changes.py",
        "if lines > settings.MEMORY_INDEX_MAX_LINES or size > settings.MEMORY_INDEX_MAX_BYTES:",
        "if lines > settings.MEMORY_INDEX_MAX_LINES:",
        ["tests/memory_addon/test_changes.py"],
    ),
    (
        "turn 6 KiB cap not applied",
        "memory_addon/services/context.py",
        "max_bytes=settings.MEMORY_TURN_MAX_BYTES",
        "max_bytes=10**9",
        ["tests/memory_addon/test_context.py"],
    ),
    (
        "proposal lifetime 24 days",
        "memory_addon/services/proposals/requests.py",
        "timedelta(hours=settings.MEMORY_PROPOSAL_TTL_HOURS)",
        "timedelta(days=settings.MEMORY_PROPOSAL_TTL_HOURS)",
        ["tests/memory_addon/test_proposals.py"],
    ),
    (
        "expiry job off the beat schedule",
        "config/settings.py",
        """        "memory-expire-proposals": {
            "task": "memory_addon.proposals_expire",
            "schedule": 300.0,
        },
""",
        "",
        ["tests/memory_addon/test_proposals.py"],
    ),
    (
        "turn names another user's binding (API)",
        "memory_addon/api.py",
        "get_object_or_404(MessagingBinding, pk=data.binding_id, owner=user)",
        "get_object_or_404(MessagingBinding, pk=data.binding_id)",
        ["tests/memory_addon/test_api.py"],
    ),
    (
        "bridges binding_for without owner",
        "bridges/selectors.py",
        "pk=binding_id, owner=owner, deleted_at__isnull=True",
        "pk=binding_id, deleted_at__isnull=True",
        ["tests/bridges/test_pages.py"],
    ),
    (
        "revert_change reaches another user's change set",
        "memory_addon/services/proposals/requests.py",
        "            user=turn.user,\n            scope_id__in=readable,\n",
        "",
        ["tests/memory_addon/test_trust.py", "tests/memory_addon/test_tools.py"],
    ),
    (
        "collection folder through a symlinked directory",
        "knowledge/services/folders.py",
        "        os.close(scanning.open_folder(path))\n",
        "        os.close(os.open(path, os.O_RDONLY))\n",
        ["tests/knowledge/test_folder_grants.py"],
    ),
    (
        "machine deletes a person's topic file",
        "memory_addon/services/changes.py",
        'elif existing and machine and not _machine_may_replace(existing, ""):',
        "elif False:",
        ["tests/memory_addon/test_proposals.py"],
    ),
    (
        "old chunks deleted when indexing starts",
        "knowledge/services/indexing.py",
        "    Source.objects.filter(pk=source.pk).update(status=Source.Status.INDEXING)\n",
        "    Source.objects.filter(pk=source.pk).update(status=Source.Status.INDEXING)\n"
        "    Document.objects.filter(source=source, path__in=[r['path'] for r in (job.scan_job.review if job.scan_job else []) if r['status'] == 'changed']).delete()\n",
        ["tests/knowledge/test_previous_index_survives.py"],
    ),
    (
        "final commit split into several transactions",
        "knowledge/services/indexing.py",
        "    replaced_paths = removed_paths | set(documents)\n    with transaction.atomic(durable=True):\n",
        "    replaced_paths = removed_paths | set(documents)\n    Document.objects.filter(source=source, path__in=replaced_paths).delete()\n    with transaction.atomic(durable=True):\n",
        ["tests/knowledge/test_previous_index_survives.py"],
    ),
    (
        "embedding error wipes the previous index",
        "knowledge/services/indexing.py",
        "    except (EmbeddingUnavailable, KnowledgeRefusal) as error:\n",
        "    except (EmbeddingUnavailable, KnowledgeRefusal) as error:\n        source.documents.all().delete()\n",
        ["tests/knowledge/test_previous_index_survives.py"],
    ),
    (
        "fatal scan error wipes the previous index",
        "knowledge/services/scans.py",
        "    if result.fatal:\n",
        "    if result.fatal:\n        source.documents.all().delete()\n",
        ["tests/knowledge/test_previous_index_survives.py"],
    ),
    (
        "agent widens ask into auto",
        "memory_addon/services/proposals/requests.py",
        '    auto = save_mode == "auto" and turn.binding is None\n    why_waiting',
        '    auto = (save_mode == "auto" or turn.agent is not None) and turn.binding is None\n    why_waiting',
        ["tests/memory_addon/test_proposals.py"],
    ),
    (
        "turn context tokens miscounted",
        "memory_addon/services/context.py",
        "                tokens = estimate_tokens(item.text)\n",
        "                tokens = estimate_tokens(item.text) + 1\n",
        ["tests/memory_addon/test_context.py::test_turn_context_api_returns_block_and_sent_along"],
    ),
]
only = sys.argv[1:]
for i, (name, path, old, new, tests) in enumerate(M):
    if only and str(i) not in only:
        continue
    f = ROOT / path
    text = f.read_text()
    if text.count(old) != 1:
        sys.exit(f"[{i}] {name}: the line to mutate is not in {path} once; update this list")
    f.write_text(text.replace(old, new))
    try:
        r = subprocess.run(  # noqa: S603
            [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:randomly", *tests],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        last = [line for line in r.stdout.splitlines() if line.strip()][-1:]
        failed = [line for line in r.stdout.splitlines() if line.startswith("FAILED")]
        print(
            f"[{i}] {name}: {'KILLED' if r.returncode else 'SURVIVED'} {last} {failed[:2]}",
            flush=True,
        )
    finally:
        f.write_text(text)
