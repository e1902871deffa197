from __future__ import annotations

import pytest

from tests.knowledge.pdfs import encrypted_pdf, image_only_pdf, text_pdf


@pytest.fixture
def sample_folder(tmp_path):
    """A folder with every kind of entry the scanner must handle."""
    root = tmp_path / "docs"
    (root / "guide").mkdir(parents=True)
    (root / "guide" / "setup.md").write_text("# Setup\n\nRun make run to start the llama server.\n")
    (root / "notes.txt").write_text("Alpacas are calm animals that live in the Andes.\n")
    (root / "tool.py").write_text("def greet():\n    return 'hello from the vicuna module'\n")
    (root / "manual.pdf").write_bytes(
        text_pdf(["Page one explains guanaco care.", "Page two covers shearing."])
    )
    (root / "scan.pdf").write_bytes(image_only_pdf())
    (root / "locked.pdf").write_bytes(encrypted_pdf())
    (root / "blob.txt").write_bytes(b"abc\x00def")
    (root / "latin1.txt").write_bytes("Caf\xe9".encode("latin-1"))
    (root / "photo.png").write_bytes(b"\x89PNG\r\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("outside the source")
    (root / "escape.txt").symlink_to(outside)
    (root / ".private").mkdir()
    (root / ".private" / "keys.md").write_text("hidden")
    (root / "node_modules" / "dep").mkdir(parents=True)
    (root / "node_modules" / "dep" / "index.js").write_text("module.exports = 1")
    return root


@pytest.fixture
def allowed_root(settings, tmp_path, user):
    """tmp_path is an allowed root, and an admin granted it to `user` (K2)."""
    from knowledge.models import FolderGrant

    settings.KNOWLEDGE_ALLOWED_ROOTS = [str(tmp_path)]
    FolderGrant.objects.create(path=str(tmp_path), user=user)
    return tmp_path


@pytest.fixture
def embedding_profile(user, fake_openai):
    from accounts.models import AIProfile
    from tests.factories import AIProfileFactory

    return AIProfileFactory(
        owner=user, role=AIProfile.Role.EMBEDDING, base_url=fake_openai.base_url, model="fake-embed"
    )


@pytest.fixture
def store(user, embedding_profile):
    from knowledge.services import store_create

    return store_create(owner=user, name="Docs", provider="openai", ai_profile=embedding_profile)


@pytest.fixture
def published():
    """The Celery tasks that leave for the broker, by name and arguments."""
    from celery.signals import before_task_publish

    sent: list[tuple[str, tuple[object, ...]]] = []

    def record(sender: str, body: tuple[tuple[object, ...], object, object], **_kw: object):
        sent.append((sender, tuple(body[0])))

    before_task_publish.connect(record, weak=False)
    yield sent
    before_task_publish.disconnect(record)


def barrier():
    """Wait until the single solo worker has finished everything queued before this call."""
    from host.tasks import ping

    assert ping.delay().get(timeout=120) == "pong"
