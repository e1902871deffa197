"""Collection pages (issue 14 item 9): files with status and remove, upload rules and
refusals, upload names, folder refusals, job status, relevance scores."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge import services
from knowledge.core import scanning
from knowledge.models import Chunk, Document, Job, Source
from knowledge.selectors import store_files
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

TRAP_NAME = "<img src=x onerror=alert(1)>\u202egpj.md"


@pytest.fixture
def kstore(user):
    return services.store_create(owner=user, name="Notes", provider="none")


def _upload(client, store, *files, **headers):
    return client.post(f"/knowledge/{store.pk}/uploads/", {"documents": list(files)}, **headers)


def _run_upload(client, store, *files) -> Source:
    """Upload through the page, then scan, confirm and index in this process."""
    response = _upload(client, store, *files)
    assert response.status_code == 302, response.content.decode()[-2000:]
    source = Source.objects.filter(store=store).latest("pk")
    scan = Job.objects.get(source=source, kind=Job.Kind.SCAN)
    services.scan_run(scan.pk)
    scan.refresh_from_db()
    assert scan.state == Job.State.REVIEW, scan.error
    index = services.scan_confirm(scan_job=scan)
    services.index_run(index.pk)
    index.refresh_from_db()
    assert index.state == Job.State.SUCCEEDED, index.error
    source.refresh_from_db()
    return source


def _folder_document(store, folder: Path, name: str, text: str) -> Document:
    (folder / name).write_text(text)
    source = Source.objects.create(store=store, kind=Source.Kind.FOLDER, path=str(folder))
    digest = hashlib.sha256(text.encode()).hexdigest()
    source.hashes = {name: digest}
    source.file_count = 1
    source.save()
    document = Document.objects.create(
        source=source, path=name, sha256=digest, format="markdown", size=len(text)
    )
    Chunk.objects.create(
        document=document, store=store, source=source, ordinal=0, text=text, token_count=5
    )
    return document


def test_files_are_listed_as_indexed_or_skipped_with_the_reason_and_problems_link(
    client, user, kstore
):
    client.force_login(user)
    source = _run_upload(
        client,
        kstore,
        SimpleUploadedFile("notes.md", b"Capybaras like warm water.\n"),
        # A lying extension: a PNG named .md is skipped with the reason, never indexed.
        SimpleUploadedFile("photo.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"),
    )
    files = store_files(kstore)
    by_path = {row.path: row for row in files.rows}
    assert by_path["notes.md"].status == "indexed" and by_path["notes.md"].chunks == 1
    assert by_path["photo.md"].status == "skipped"
    assert "binary" in by_path["photo.md"].reason
    assert source.problem_count == 1
    store_page = client.get(f"/knowledge/{kstore.pk}/").content.decode()
    problems_url = f"/knowledge/{kstore.pk}/files/?source={source.pk}&amp;show=problems"
    assert f'href="{problems_url}">Problems: 1</a>' in store_page
    problems = client.get(problems_url.replace("&amp;", "&")).content.decode()
    assert 'data-status="skipped"' in problems and "binary" in problems
    assert 'data-status="indexed"' not in problems
    everything = client.get(f"/knowledge/{kstore.pk}/files/").content.decode()
    assert "notes.md" in everything and "photo.md" in everything


def test_files_of_a_scan_waiting_for_review_are_listed_as_waiting(client, user, kstore):
    client.force_login(user)
    _upload(client, kstore, SimpleUploadedFile("later.md", b"Tapirs swim well.\n"))
    source = Source.objects.get(store=kstore)
    services.scan_run(Job.objects.get(source=source).pk)
    rows = store_files(kstore).rows
    assert [(row.path, row.status) for row in rows] == [("later.md", "waiting")]
    page = client.get(f"/knowledge/{kstore.pk}/files/").content.decode()
    assert "waiting for review or indexing" in page
    assert "Remove later.md" not in page  # nothing indexed yet, nothing to remove


def test_removing_an_uploaded_file_deletes_its_excerpts_and_its_copy(
    client, user, kstore, django_capture_on_commit_callbacks
):
    client.force_login(user)
    source = _run_upload(
        client,
        kstore,
        SimpleUploadedFile("keep.md", b"Keep this about okapis.\n"),
        SimpleUploadedFile("drop.md", b"Drop this about quokkas.\n"),
    )
    dropped = Document.objects.get(source=source, path="drop.md")
    copy = Path(source.path) / "drop.md"
    assert copy.exists()
    with django_capture_on_commit_callbacks(execute=True):  # the copy goes after the commit
        response = client.post(f"/knowledge/files/{dropped.pk}/remove/")
    assert response.status_code == 302
    assert not Document.objects.filter(pk=dropped.pk).exists()
    assert not Chunk.objects.filter(document_id=dropped.pk).exists()
    assert not copy.exists() and (Path(source.path) / "keep.md").exists()
    source.refresh_from_db()
    assert source.file_count == 1 and source.chunk_count == 1
    assert source.label == "keep.md"
    assert "quokkas" not in services_search(kstore, "quokkas")


def test_deleting_a_collection_leaves_no_folder_of_its_uploads(
    client, user, kstore, django_capture_on_commit_callbacks
):
    client.force_login(user)
    source = _run_upload(client, kstore, SimpleUploadedFile("a.md", b"Tapirs swim well.\n"))
    collection_folder = Path(source.path).parent
    assert collection_folder.name == f"store-{kstore.pk}" and collection_folder.is_dir()
    with django_capture_on_commit_callbacks(execute=True):
        services.store_delete(store=kstore)
    assert not collection_folder.exists()
    assert collection_folder.parent.is_dir()  # other collections' uploads stay


def test_a_deleted_account_leaves_no_folder_of_its_collections_uploads(
    client, django_capture_on_commit_callbacks
):
    owner = UserFactory()
    store = services.store_create(owner=owner, name="Notes", provider="none")
    client.force_login(owner)
    source = _run_upload(client, store, SimpleUploadedFile("a.md", b"Tapirs swim well.\n"))
    collection_folder = Path(source.path).parent
    assert collection_folder.is_dir()
    with django_capture_on_commit_callbacks(execute=True):  # the folder goes on commit
        owner.delete()  # as the admin deletes an account: the collections go by cascade
    assert not collection_folder.exists()


def services_search(store, query: str) -> str:
    from knowledge.retrieval import retrieve

    return retrieve([store], query, context_window=8192).block


def test_removing_a_folder_file_keeps_the_file_and_leaves_it_out_of_updates(
    client, user, kstore, tmp_path
):
    folder = tmp_path / "docs"
    folder.mkdir()
    document = _folder_document(kstore, folder, "a [draft]*.md", "Walruses sleep on ice.")
    client.force_login(user)
    assert client.post(f"/knowledge/files/{document.pk}/remove/").status_code == 302
    source = Source.objects.get(pk=document.source_id)
    assert (folder / "a [draft]*.md").exists()  # the original is never touched
    assert source.hashes == {} and source.file_count == 0 and source.chunk_count == 0
    assert not Chunk.objects.filter(source=source).exists()
    result = scanning.scan(scanning.ScanSpec(root=folder, exclude=tuple(source.exclude_globs)))
    [row] = result.rows
    assert (row.status, row.reason) == ("skipped", "excluded by a pattern")


def test_another_persons_collection_document_and_source_ids_are_404(client, kstore, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    document = _folder_document(kstore, folder, "secret.md", "Private plans.")
    stranger = UserFactory()
    own = services.store_create(owner=stranger, name="Mine", provider="none")
    client.force_login(stranger)
    assert client.post(f"/knowledge/files/{document.pk}/remove/").status_code == 404
    assert Document.objects.filter(pk=document.pk).exists()
    assert client.get(f"/knowledge/{kstore.pk}/files/").status_code == 404
    other_source = document.source_id
    assert client.get(f"/knowledge/{own.pk}/files/?source={other_source}").status_code == 404
    assert client.get(f"/knowledge/{own.pk}/files/?source=x").status_code == 404
    assert client.get(f"/knowledge/files/{document.pk}/remove/").status_code == 405


def test_upload_sources_are_named_by_their_file_names_never_a_server_path(client, user, kstore):
    client.force_login(user)
    response = _upload(
        client,
        kstore,
        SimpleUploadedFile(TRAP_NAME, b"Harmless text.\n"),
        SimpleUploadedFile("\u00dcbersicht.md", "Eine \u00dcbersicht.\n".encode()),
    )
    assert response.status_code == 302
    source = Source.objects.get(store=kstore)
    trap, umlaut = source.label.split(", ")
    assert umlaut == "\u00dcbersicht.md"
    assert trap.startswith("_img src_x onerror_alert(1)") and trap.endswith("gpj.md")
    page = client.get(f"/knowledge/{kstore.pk}/").content.decode()
    assert source.label in page
    assert source.path not in page and "store-" not in page
    assert "\u202e" not in page and "<img" not in page
    assert sorted(p.name for p in Path(source.path).iterdir()) == [trap, umlaut]


def test_upload_names_lose_markup_folders_and_bidi_controls():
    assert services.upload_safe_name("<b>\u202egpj.md") == "_b__gpj.md"
    assert services.upload_safe_name("..\\..\\win.md") == "win.md"
    assert services.upload_safe_name("a\u200db\u0000.md") == "a_b_.md"
    assert services.upload_safe_name("Cafe\u0301.md") == "Caf\u00e9.md"  # NFC, kept
    assert services.upload_safe_name("...") == "file"


def test_a_file_covered_by_a_folder_source_is_refused_naming_the_folder(
    client, user, kstore, tmp_path
):
    folder = tmp_path / "docs"
    folder.mkdir()
    _folder_document(kstore, folder, "guide.md", "Emus cannot walk backwards.")
    client.force_login(user)
    response = _upload(
        client, kstore, SimpleUploadedFile("copy.md", b"Emus cannot walk backwards.")
    )
    assert response.status_code == 400
    text = response.content.decode()
    assert f"copy.md is already covered by the folder source {folder} (as guide.md)" in text
    assert Source.objects.filter(store=kstore, kind=Source.Kind.UPLOAD).count() == 0


def test_a_duplicate_upload_is_refused_naming_the_existing_upload(client, user, kstore):
    client.force_login(user)
    _run_upload(client, kstore, SimpleUploadedFile("first.md", b"Same words.\n"))
    response = _upload(client, kstore, SimpleUploadedFile("again.md", b"Same words.\n"))
    assert response.status_code == 400
    assert "again.md is already in this collection: uploaded as first.md" in (
        response.content.decode()
    )
    twice = _upload(
        client,
        kstore,
        SimpleUploadedFile("x.md", b"Twins.\n"),
        SimpleUploadedFile("y.md", b"Twins.\n"),
    )
    assert twice.status_code == 400
    assert "y.md and x.md are the same file" in twice.content.decode()
    assert Source.objects.filter(store=kstore).count() == 1


def test_an_upload_over_the_limit_is_refused_and_nothing_is_kept(client, user, kstore, settings):
    settings.KNOWLEDGE_UPLOAD_MAX_FILE_BYTES = 1000
    client.force_login(user)
    response = _upload(
        client,
        kstore,
        SimpleUploadedFile("small.md", b"fine\n"),
        SimpleUploadedFile("big.md", b"x" * 5000),
    )
    assert response.status_code == 400
    assert "big.md is 4.9\xa0KB; a file may be at most 1000\xa0bytes" in response.content.decode()
    assert not Source.objects.filter(store=kstore).exists()
    # The page shows the same limit before anyone picks a file.
    page = client.get(f"/knowledge/{kstore.pk}/").content.decode()
    assert 'data-max-bytes="1000"' in page and "at most 1000\xa0bytes each" in page


def test_the_upload_form_states_the_total_the_server_takes_in_one_upload(
    client, user, kstore, settings
):
    settings.REQUEST_MAX_UPLOAD_BYTES = 3 * 1024 * 1024
    client.force_login(user)
    page = client.get(f"/knowledge/{kstore.pk}/").content.decode()
    assert 'data-max-total="3145728"' in page and "At most 3.0\xa0MB per upload." in page
    german = client.get(f"/knowledge/{kstore.pk}/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Höchstens 3,0\xa0MB pro Upload." in german


def test_a_format_that_is_not_indexed_is_refused_before_upload(client, user, kstore):
    client.force_login(user)
    response = _upload(
        client, kstore, SimpleUploadedFile("photo.png", b"\x89PNG"), HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 400
    body = response.content.decode()
    assert body.lstrip().startswith('<section class="card" id="upload-card">')  # the partial
    assert "photo.png is not a format collections index" in body
    assert not Source.objects.filter(store=kstore).exists()


def test_an_htmx_upload_is_answered_with_a_client_redirect(client, user, kstore):
    client.force_login(user)
    response = _upload(
        client, kstore, SimpleUploadedFile("a.md", b"Alpacas.\n"), HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == f"/knowledge/{kstore.pk}/"


def test_the_upload_needs_a_csrf_token(user, kstore):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = _upload(client, kstore, SimpleUploadedFile("a.md", b"Alpacas.\n"))
    assert response.status_code == 403
    assert not Source.objects.filter(store=kstore).exists()


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("missing", "There is no folder at"),
        ("docs/../docs", "without &#x27;..&#x27;"),
        ("../docs", "without &#x27;..&#x27;"),
    ],
)
def test_bad_folders_are_a_form_error(client, user, kstore, allowed_root, path, message):
    (allowed_root / "docs").mkdir()
    raw = path if path.startswith("..") else f"{allowed_root}/{path}"
    client.force_login(user)
    response = client.post(
        f"/knowledge/{kstore.pk}/folders/", {"path": raw, "max_file_mib": 50, "sync_mode": "manual"}
    )
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Source.objects.filter(store=kstore).exists()


@pytest.mark.parametrize("state", [Job.State.REVIEW, Job.State.DISMISSED, Job.State.CANCELLED])
def test_a_scan_that_is_not_done_shows_no_full_progress_bar(client, user, kstore, state):
    source = Source.objects.create(store=kstore, kind=Source.Kind.UPLOAD, name="a.md")
    job = Job.objects.create(
        store=kstore, source=source, kind=Job.Kind.SCAN, state=state, progress=100
    )
    client.force_login(user)
    page = client.get(f"/knowledge/jobs/{job.pk}/").content.decode()
    assert 'class="progress"' not in page
    assert str(job.get_state_display()) in page


def test_a_running_job_shows_its_progress_bar(client, user, kstore):
    source = Source.objects.create(store=kstore, kind=Source.Kind.UPLOAD, name="a.md")
    job = Job.objects.create(
        store=kstore, source=source, kind=Job.Kind.INDEX, state=Job.State.RUNNING, progress=40
    )
    client.force_login(user)
    page = client.get(f"/knowledge/jobs/{job.pk}/").content.decode()
    assert 'class="progress" data-state="running"' in page and "width: 40%" in page


def test_test_search_shows_each_excerpts_relevance_score(client, user, kstore):
    client.force_login(user)
    _run_upload(client, kstore, SimpleUploadedFile("pets.md", b"Axolotls regrow their legs.\n"))
    page = client.get(
        f"/knowledge/{kstore.pk}/search/", {"query": "axolotls", "context_window": 8192}
    ).content.decode()
    assert "pets.md" in page
    relevance = page.split('data-testid="relevance">', 1)[1].split("</span>", 1)[0]
    assert "keyword score" in relevance
    score = relevance.split("keyword score ", 1)[1].strip()
    assert float(score) > 0


def test_the_files_page_and_upload_rules_speak_german(client, user, kstore):
    client.force_login(user)
    source = _run_upload(
        client,
        kstore,
        SimpleUploadedFile("gut.md", b"Lamas summen.\n"),
        SimpleUploadedFile("bild.md", b"\x89PNG\r\n\x1a\n\x00\x00"),
    )
    store_page = client.get(f"/knowledge/{kstore.pk}/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert ">Probleme: 1</a>" in store_page and "je höchstens 50,0\xa0MB" in store_page
    assert "Dateien hierher ziehen oder auswählen:" in store_page
    problems = client.get(
        f"/knowledge/{kstore.pk}/files/",
        {"source": source.pk, "show": "problems"},
        HTTP_ACCEPT_LANGUAGE="de",
    ).content.decode()
    assert "Übersprungene Dateien" in problems and "übersprungen" in problems
    assert "1 indexiert · 0 wartend · 1 übersprungen" in problems


def test_the_api_names_an_upload_source_by_its_files(client, user, kstore):
    client.force_login(user)
    _upload(
        client, kstore, SimpleUploadedFile("b.md", b"Bees.\n"), SimpleUploadedFile("a.md", b"A")
    )
    [listed] = client.get(f"/api/knowledge/stores/{kstore.pk}/sources").json()
    assert listed["label"] == "a.md, b.md"
    folder = Source.objects.create(store=kstore, kind=Source.Kind.FOLDER, path="/srv/docs")
    labels = {
        s["id"]: s["label"] for s in client.get(f"/api/knowledge/stores/{kstore.pk}/sources").json()
    }
    assert labels[folder.pk] == "/srv/docs"


def test_a_removed_file_is_not_brought_back_by_a_waiting_review(client, user, kstore, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    document = _folder_document(kstore, folder, "old.md", "Yaks.")
    (folder / "old.md").write_text("Yaks grow thick wool.")
    digest = hashlib.sha256(b"Yaks grow thick wool.").hexdigest()
    row = {"path": "old.md", "format": "markdown", "size": 21, "status": "changed"}
    review = Job.objects.create(
        store=kstore,
        source=document.source,
        kind=Job.Kind.SCAN,
        state=Job.State.REVIEW,
        review=[{**row, "reason": "", "sha256": digest}],
    )
    client.force_login(user)
    assert client.post(f"/knowledge/files/{document.pk}/remove/").status_code == 302
    review.refresh_from_db()
    assert review.review[0]["status"] == "skipped"
    services.index_run(services.scan_confirm(scan_job=review).pk)
    assert not Document.objects.filter(source=document.source).exists()
    assert not Chunk.objects.filter(source=document.source).exists()


def test_refusals_read_in_german(client, user, kstore, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    _folder_document(kstore, folder, "guide.md", "Emus laufen nicht rückwärts.")
    client.force_login(user)
    response = client.post(
        f"/knowledge/{kstore.pk}/uploads/",
        {"documents": [SimpleUploadedFile("kopie.md", "Emus laufen nicht rückwärts.".encode())]},
        HTTP_ACCEPT_LANGUAGE="de",
    )
    assert response.status_code == 400
    assert f"kopie.md ist schon durch die Ordnerquelle {folder} abgedeckt (als guide.md)" in (
        response.content.decode()
    )
