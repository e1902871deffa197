"""Issue 29's chat items: the header changes the model and the collections, files are
attached in the chat through the collection upload rules, and any earlier message can
be edited (into a copy of the conversation up to it)."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.urls import reverse

from accounts.models import AIProfile, Membership
from chat.attachments import conversation_attach
from chat.models import Conversation, Message
from chat.runner import turn_run
from chat.services import ChatRefused, conversation_create, message_edit
from knowledge import services as knowledge
from knowledge.errors import KnowledgeRefusal
from knowledge.events import SETTLED
from knowledge.models import Chunk, Job, Source, Store
from knowledge.services import store_create, store_share_set
from tests.factories import AIProfileFactory, OrganizationFactory, UserFactory

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def stranger():
    return UserFactory()


def _history(conversation: Conversation) -> list[tuple[str, str]]:
    return list(conversation.messages.order_by("created_at", "id").values_list("role", "content"))


def _turn(conversation: Conversation, role: str, content: str) -> Message:
    return Message.objects.create(conversation=conversation, role=role, content=content)


# --- 1. The header's model and collections -------------------------------------------


@pytest.mark.parametrize("headers", [HTMX, {}], ids=["htmx", "plain-form"])
def test_the_header_changes_the_model_for_the_next_answer(signed_in, person, conversation, headers):
    second = AIProfileFactory(owner=person, name="Second", model="second-model")
    response = signed_in.post(
        reverse("chat_profile", args=[conversation.pk]), {"profile": second.pk}, **headers
    )
    conversation.refresh_from_db()
    assert conversation.ai_profile == second
    if headers:
        body = response.content.decode()
        assert response.status_code == 200 and 'id="header-pickers"' in body
        assert f'value="{second.pk}" selected' in body and "next answer uses it" in body
    else:
        assert response.status_code == 302


@pytest.mark.parametrize("kind", ["foreign", "embedding", "not-a-number"])
def test_the_header_refuses_a_model_the_person_cannot_chat_with(
    signed_in, person, profile, conversation, stranger, kind
):
    value = {
        "foreign": lambda: AIProfileFactory(owner=stranger).pk,
        "embedding": lambda: AIProfileFactory(owner=person, role=AIProfile.Role.EMBEDDING).pk,
        "not-a-number": lambda: "1 OR 1=1",
    }[kind]()
    response = signed_in.post(
        reverse("chat_profile", args=[conversation.pk]), {"profile": value}, **HTMX
    )
    assert response.status_code == 200 and 'id="header-error"' in response.content.decode()
    conversation.refresh_from_db()
    assert conversation.ai_profile == profile


def test_the_header_adds_own_and_shared_collections_and_refuses_any_other(
    signed_in, person, conversation, stranger
):
    own = store_create(owner=person, name="Mine", provider="none")
    theirs = store_create(owner=stranger, name="Theirs", provider="none")
    shared = store_create(owner=stranger, name="Shared", provider="none")
    organization = OrganizationFactory()
    for member in (person, stranger):
        Membership.objects.create(organization=organization, user=member)
    store_share_set(
        store=shared, actor=stranger, organization_id=None, readers=[person.pk], managers=[]
    )
    url = reverse("chat_store_add", args=[conversation.pk])

    page = signed_in.get(reverse("chat_conversation", args=[conversation.pk])).content.decode()
    picker = page[page.index('id="header-store-add"') :]
    picker = picker[: picker.index("</select>")]
    assert "Mine" in picker and "Shared" in picker and "Theirs" not in picker

    for store in (own, shared):
        assert signed_in.post(url, {"store": store.pk}, **HTMX).status_code == 200
    refused = signed_in.post(url, {"store": theirs.pk}, **HTMX).content.decode()
    assert "No such collection." in refused
    assert "Choose a collection" in signed_in.post(url, {"store": "x"}, **HTMX).content.decode()
    assert set(conversation.stores.all()) == {own, shared}


def test_the_header_removes_a_collection_and_the_collection_stays(signed_in, person, conversation):
    store = store_create(owner=person, name="Docs", provider="none")
    conversation.stores.add(store)
    response = signed_in.post(
        reverse("chat_store_remove", args=[conversation.pk, store.pk]), **HTMX
    )
    body = response.content.decode()
    assert response.status_code == 200 and f'data-store="{store.pk}"' not in body
    assert not conversation.stores.exists() and Store.objects.filter(pk=store.pk).exists()


@pytest.mark.parametrize("which", ["not-attached", "another-persons", "missing"])
def test_removing_a_collection_that_is_not_attached_says_so(
    signed_in, person, stranger, conversation, which
):
    store_id = {
        "not-attached": lambda: store_create(owner=person, name="Mine", provider="none").pk,
        "another-persons": lambda: store_create(owner=stranger, name="Theirs", provider="none").pk,
        "missing": lambda: 999_999,
    }[which]()
    response = signed_in.post(
        reverse("chat_store_remove", args=[conversation.pk, store_id]), **HTMX
    )
    body = response.content.decode()
    assert "That collection is not attached to this conversation." in body
    assert "Collection removed" not in body


def test_the_model_changes_while_an_answer_is_written_and_in_a_temporary_chat(
    signed_in, person, profile
):
    temporary = conversation_create(user=person, temporary=True)
    _turn(temporary, "user", "Hi")
    Message.objects.create(conversation=temporary, role="assistant", state="streaming")
    second = AIProfileFactory(owner=person, name="Second")
    signed_in.post(reverse("chat_profile", args=[temporary.pk]), {"profile": second.pk}, **HTMX)
    temporary.refresh_from_db()
    assert temporary.ai_profile == second


@pytest.mark.parametrize(
    "name",
    ["chat_profile", "chat_store_add", "chat_attach", "chat_attachments"],
)
def test_another_persons_conversation_header_and_attachments_answer_404(signed_in, stranger, name):
    theirs = Conversation.objects.create(
        owner=stranger, ai_profile=AIProfileFactory(owner=stranger)
    )
    url = reverse(name, args=[theirs.pk])
    response = signed_in.get(url) if name == "chat_attachments" else signed_in.post(url, {})
    assert response.status_code == 404


def test_the_header_answers_404_for_another_persons_collection_removal(signed_in, person, stranger):
    theirs = Conversation.objects.create(
        owner=stranger, ai_profile=AIProfileFactory(owner=stranger)
    )
    store = store_create(owner=stranger, name="Theirs", provider="none")
    theirs.stores.add(store)
    response = signed_in.post(reverse("chat_store_remove", args=[theirs.pk, store.pk]))
    assert response.status_code == 404 and theirs.stores.count() == 1


# --- 2. Attaching a file ---------------------------------------------------------------


def _attach(client, conversation, *files, **headers):
    return client.post(
        reverse("chat_attach", args=[conversation.pk]), {"documents": list(files)}, **headers
    )


def _scan(conversation: Conversation) -> Job:
    conversation.refresh_from_db()
    scan = Job.objects.filter(store_id=conversation.own_store_id, kind=Job.Kind.SCAN).latest("pk")
    knowledge.scan_run(scan.pk)
    return _settled(scan)


def _settled(job: Job) -> Job:
    """The job once it has settled: a Celery worker another test of this process started
    may have picked it up before the test's own run."""
    deadline = time.monotonic() + 60
    while (job := Job.objects.get(pk=job.pk)).state not in SETTLED:
        assert time.monotonic() < deadline, f"the {job.kind} job did not finish"
        time.sleep(0.1)
    return job


@pytest.mark.django_db(transaction=True)
def test_an_attached_file_is_checked_indexed_on_confirm_and_reaches_the_next_turn(
    signed_in, person, conversation, fake_openai, ask
):
    fact = "The tapir enclosure opens at nine on Sundays."
    response = _attach(signed_in, conversation, SimpleUploadedFile("zoo.md", fact.encode()), **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and "zoo.md" in body
    # Checking, or already checked: a worker of this test process may have run the scan.
    assert "checking" in body or "waiting for you to index it" in body
    conversation.refresh_from_db()
    own = conversation.own_store
    assert own is not None and own.owner == person and str(conversation.pk) in own.name
    assert own in conversation.stores.all()

    scan = _scan(conversation)
    assert scan.state == Job.State.REVIEW
    chips = signed_in.get(reverse("chat_attachments", args=[conversation.pk])).content.decode()
    assert "waiting for you to index it" in chips and not Chunk.objects.filter(store=own).exists()

    response = signed_in.post(
        reverse("chat_attachment_index", args=[conversation.pk, scan.pk]), **HTMX
    )
    assert response.status_code == 200
    index = Job.objects.get(store=own, kind=Job.Kind.INDEX)
    knowledge.index_run(index.pk)
    _settled(index)
    chips = signed_in.get(reverse("chat_attachments", args=[conversation.pk])).content.decode()
    assert "indexed" in chips

    fake_openai.chat_replies.append({"content": "At nine."})
    turn_run(message_id=ask("When does the tapir enclosure open on Sundays?").pk)
    sent = json.dumps(fake_openai.chat_requests[-1]["messages"])
    assert "tapir enclosure opens at nine" in sent


def test_a_second_attach_goes_into_the_same_own_collection(signed_in, conversation):
    _attach(signed_in, conversation, SimpleUploadedFile("a.md", b"First file."))
    conversation.refresh_from_db()
    first = conversation.own_store_id
    Job.objects.filter(store_id=first).update(state=Job.State.REVIEW)  # the scan is done
    _attach(signed_in, conversation, SimpleUploadedFile("b.md", b"Second file."))
    conversation.refresh_from_db()
    assert conversation.own_store_id == first
    assert Source.objects.filter(store_id=first).count() == 2
    assert Store.objects.filter(owner=conversation.owner).count() == 1


def test_a_file_attached_while_the_one_before_is_checked_waits_in_line_for_it(
    signed_in, conversation
):
    first = _attach(signed_in, conversation, SimpleUploadedFile("a.md", b"First file."), **HTMX)
    second = _attach(signed_in, conversation, SimpleUploadedFile("b.md", b"Second file."), **HTMX)
    assert first.status_code == second.status_code == 200
    body = second.content.decode()
    assert "a.md" in body and "b.md" in body and 'id="attach-error"' not in body
    conversation.refresh_from_db()
    states = list(
        Job.objects.filter(store_id=conversation.own_store_id)
        .order_by("pk")
        .values_list("state", flat=True)
    )
    # The test transaction hides both from any worker: the first is queued, the second waits.
    assert states == [Job.State.QUEUED, Job.State.WAITING]
    assert "in line behind another file" in body


@pytest.mark.django_db(transaction=True)
def test_parallel_first_attachments_make_one_own_collection_and_keep_every_file(
    person, conversation
):
    count = 6
    start = threading.Barrier(count)

    def attach(i: int) -> Source:
        try:
            start.wait(timeout=30)
            return conversation_attach(
                user=person,
                conversation=Conversation.objects.get(pk=conversation.pk),
                files=[SimpleUploadedFile(f"f{i}.md", f"File number {i}.".encode())],
            )
        finally:
            connection.close()

    with ThreadPoolExecutor(count) as pool:
        sources = list(pool.map(attach, range(count)))
    conversation.refresh_from_db()
    assert Store.objects.filter(owner=person).count() == 1
    assert {source.store_id for source in sources} == {conversation.own_store_id}
    assert Source.objects.filter(store_id=conversation.own_store_id).count() == count


def test_a_collection_made_at_the_same_time_under_the_same_name_is_a_refusal(person, monkeypatch):
    from knowledge.services import stores

    real = stores._check_new_store

    def check_then_race(**kwargs):
        # As if a parallel request made it between the name check and the insert.
        checked = real(**kwargs)
        Store.objects.create(owner=person, name="Handbook", provider="none")
        return checked

    monkeypatch.setattr(stores, "_check_new_store", check_then_race)
    with pytest.raises(KnowledgeRefusal, match="already have a collection"):
        store_create(owner=person, name="Handbook", provider="none")


@pytest.mark.parametrize(("accept", "language"), [("de", "german"), ("en", "english")])
def test_a_chats_own_collection_stems_words_in_the_language_the_person_uses(
    signed_in, conversation, accept, language
):
    _attach(
        signed_in,
        conversation,
        SimpleUploadedFile("a.md", b"Die Gehege schliessen um neun."),
        HTTP_ACCEPT_LANGUAGE=accept,
    )
    conversation.refresh_from_db()
    assert conversation.own_store.language == language


@pytest.mark.django_db(transaction=True)
def test_a_deleted_conversations_own_collection_goes_with_the_last_chat_that_has_it(
    signed_in, person, profile, conversation
):
    from chat.services import conversation_delete

    _attach(signed_in, conversation, SimpleUploadedFile("a.md", b"First file."))
    conversation.refresh_from_db()
    own = conversation.own_store
    response = signed_in.delete(f"/api/chat/conversations/{conversation.pk}")
    assert response.status_code == 204
    assert not Store.objects.filter(pk=own.pk).exists()

    kept = conversation_create(user=person, profile_id=profile.pk)
    _attach(signed_in, kept, SimpleUploadedFile("b.md", b"Second file."))
    kept.refresh_from_db()
    elsewhere = conversation_create(user=person, profile_id=profile.pk)
    elsewhere.stores.add(kept.own_store)
    conversation_delete(conversation=kept)
    assert Store.objects.filter(pk=kept.own_store_id).exists()  # still attached elsewhere
    elsewhere.refresh_from_db()
    assert elsewhere.own_store_id == kept.own_store_id  # its files are that chat's now
    conversation_delete(conversation=elsewhere)
    assert not Store.objects.filter(pk=kept.own_store_id).exists()


def test_an_oversized_file_is_refused_naming_it_and_leaves_no_collection(
    signed_in, conversation, settings
):
    settings.KNOWLEDGE_UPLOAD_MAX_FILE_BYTES = 10
    response = _attach(
        signed_in, conversation, SimpleUploadedFile("big-notes.md", b"x" * 50), **HTMX
    )
    body = response.content.decode()
    assert 'id="attach-error"' in body and "big-notes.md" in body and "at most" in body
    conversation.refresh_from_db()
    assert conversation.own_store_id is None and not Store.objects.exists()


def test_a_file_collections_cannot_index_is_refused_naming_it(signed_in, conversation):
    response = _attach(
        signed_in, conversation, SimpleUploadedFile("photo.jpg", b"\xff\xd8\xff"), **HTMX
    )
    body = response.content.decode()
    assert "photo.jpg is not a format collections index" in body
    assert not Source.objects.exists()


def test_without_htmx_a_refusal_comes_back_as_a_message_on_the_page(signed_in, conversation):
    response = _attach(
        signed_in, conversation, SimpleUploadedFile("photo.jpg", b"\xff\xd8\xff"), follow=True
    )
    assert "photo.jpg is not a format collections index" in response.content.decode()


def test_a_file_with_a_secret_waits_for_the_review_and_is_not_indexed_before(
    signed_in, conversation
):
    secret = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
    _attach(signed_in, conversation, SimpleUploadedFile("keys.md", secret.encode()))
    scan = _scan(conversation)
    assert scan.state == Job.State.REVIEW
    assert not Chunk.objects.filter(store_id=conversation.own_store_id).exists()


def test_a_file_that_is_not_text_is_left_out_with_the_scans_reason(signed_in, conversation):
    _attach(signed_in, conversation, SimpleUploadedFile("broken.md", b"bad \x00 bytes"))
    _scan(conversation)
    chips = signed_in.get(reverse("chat_attachments", args=[conversation.pk])).content.decode()
    assert "broken.md is left out:" in chips


def test_a_temporary_chat_refuses_attachments_and_keeps_nothing(signed_in, person, profile):
    temporary = conversation_create(user=person, temporary=True)
    response = _attach(signed_in, temporary, SimpleUploadedFile("a.md", b"Hello."), **HTMX)
    assert "A temporary chat keeps no files" in response.content.decode()
    with pytest.raises(ChatRefused):
        conversation_attach(
            user=person, conversation=temporary, files=[SimpleUploadedFile("a.md", b"Hello.")]
        )
    assert not Store.objects.exists() and not Source.objects.exists()


def test_confirming_another_collections_review_from_a_chat_is_refused(
    signed_in, person, conversation
):
    other = store_create(owner=person, name="Other", provider="none")
    _source, job = knowledge.source_add_upload(
        store=other, files=[SimpleUploadedFile("x.md", b"Elsewhere.")]
    )
    response = signed_in.post(
        reverse("chat_attachment_index", args=[conversation.pk, job.pk]), **HTMX
    )
    assert "No such attached file." in response.content.decode()


# --- 3. Editing an earlier message -----------------------------------------------------


@pytest.fixture
def three_turns(conversation):
    rows = []
    for n in (1, 2, 3):
        rows.append(_turn(conversation, "user", f"Question {n}"))
        rows.append(_turn(conversation, "assistant", f"Answer {n}"))
    return rows


def test_editing_an_earlier_message_starts_a_copy_with_exactly_the_history_before_it(
    signed_in, person, conversation, three_turns, django_capture_on_commit_callbacks
):
    before = _history(conversation)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = signed_in.post(
            reverse("chat_message_edit", args=[three_turns[2].pk]), {"text": "Question 2, better"}
        )
    copy = Conversation.objects.exclude(pk=conversation.pk).get()
    assert response.status_code == 302 and response.url == reverse(
        "chat_conversation", args=[copy.pk]
    )
    assert _history(copy) == [
        ("user", "Question 1"),
        ("assistant", "Answer 1"),
        ("user", "Question 2, better"),
        ("assistant", ""),
    ]
    assert copy.messages.last().state == Message.State.STREAMING and len(queued) == 1
    assert copy.edited_from == conversation and copy.owner == person
    assert _history(conversation) == before  # the original is untouched
    page = signed_in.get(response.url).content.decode()
    assert (
        'id="edited-from"' in page and reverse("chat_conversation", args=[conversation.pk]) in page
    )


def test_the_same_edit_sent_twice_makes_one_copy_and_the_copied_turns_keep_their_times(
    signed_in, person, conversation, three_turns
):
    edit = reverse("chat_message_edit", args=[three_turns[2].pk])
    first = signed_in.post(edit, {"text": "Question 2, better"})
    again = signed_in.post(edit, {"text": "Question 2, better"})
    copy = Conversation.objects.get(edited_from=conversation)  # one copy only
    assert first.url == again.url == reverse("chat_conversation", args=[copy.pk])
    copied = list(copy.messages.order_by("created_at", "id"))
    assert [m.created_at for m in copied[:2]] == [m.created_at for m in three_turns[:2]]
    assert copied[2].created_at > three_turns[-1].created_at  # the edit is new
    # A different text is a new edit, with its own copy.
    signed_in.post(edit, {"text": "Question 2, other"})
    assert Conversation.objects.filter(edited_from=conversation).count() == 2


def test_the_same_edit_sent_again_at_the_answer_limit_gets_its_first_answer(
    person, conversation, three_turns, settings, django_capture_on_commit_callbacks
):
    settings.CHAT_MAX_ANSWERS_IN_FLIGHT = 1
    with django_capture_on_commit_callbacks(execute=False):
        first = message_edit(user=person, message=three_turns[2], text="Question 2, better")
        again = message_edit(user=person, message=three_turns[2], text="Question 2, better")
        assert again.pk == first.pk  # one answer in flight: the limit, yet the same edit
        with pytest.raises(ChatRefused, match="still being written"):
            message_edit(user=person, message=three_turns[2], text="Question 2, other")


def test_editing_the_first_message_copies_no_history(person, conversation, three_turns):
    answer = message_edit(user=person, message=three_turns[0], text="A new start")
    assert _history(answer.conversation) == [("user", "A new start"), ("assistant", "")]


def test_editing_the_last_message_changes_it_in_place_as_before(
    signed_in, conversation, three_turns
):
    signed_in.post(reverse("chat_message_edit", args=[three_turns[4].pk]), {"text": "Question 3!"})
    assert Conversation.objects.count() == 1
    assert _history(conversation)[-2:] == [("user", "Question 3!"), ("assistant", "")]


@pytest.mark.django_db(transaction=True)
def test_the_edited_turn_is_answered_like_any_turn_from_the_copied_history(
    person, conversation, three_turns, fake_openai
):
    answer = message_edit(user=person, message=three_turns[2], text="Question 2, better")
    fake_openai.chat_replies.append({"content": "A better answer."})
    turn_run(message_id=answer.pk)
    answer.refresh_from_db()
    assert answer.state == Message.State.COMPLETE and answer.sent_along
    sent = [m.get("content") for m in fake_openai.chat_requests[-1]["messages"]]
    joined = json.dumps(sent)
    assert "Question 1" in joined and "Answer 1" in joined and "Question 2, better" in joined
    assert "Question 3" not in joined and "Answer 2" not in joined


def test_editing_another_persons_message_is_a_404(signed_in, stranger):
    theirs = Conversation.objects.create(
        owner=stranger, ai_profile=AIProfileFactory(owner=stranger)
    )
    first = _turn(theirs, "user", "Mine")
    _turn(theirs, "assistant", "Yes")
    _turn(theirs, "user", "Later")
    response = signed_in.post(reverse("chat_message_edit", args=[first.pk]), {"text": "hijack"})
    assert response.status_code == 404 and Conversation.objects.count() == 1


def test_an_answer_cannot_be_edited(signed_in, conversation, three_turns):
    response = signed_in.post(
        reverse("chat_message_edit", args=[three_turns[1].pk]), {"text": "Nope"}, follow=True
    )
    assert "Only your own messages can be edited." in response.content.decode()
    assert Conversation.objects.count() == 1


def test_an_earlier_message_of_a_temporary_chat_is_refused_and_the_last_is_edited(
    signed_in, person, profile
):
    temporary = conversation_create(user=person, temporary=True)
    first = _turn(temporary, "user", "One")
    _turn(temporary, "assistant", "Ok")
    last = _turn(temporary, "user", "Two")
    response = signed_in.post(
        reverse("chat_message_edit", args=[first.pk]), {"text": "Uno"}, follow=True
    )
    assert "only your last message can be edited" in response.content.decode()
    signed_in.post(reverse("chat_message_edit", args=[last.pk]), {"text": "Dos"})
    assert Conversation.objects.count() == 1
    assert _history(temporary)[:3] == [("user", "One"), ("assistant", "Ok"), ("user", "Dos")]


def test_an_empty_edit_is_refused_and_changes_nothing(signed_in, conversation, three_turns):
    response = signed_in.post(
        reverse("chat_message_edit", args=[three_turns[0].pk]), {"text": "  "}, follow=True
    )
    assert "Write a message first." in response.content.decode()
    assert Conversation.objects.count() == 1


def test_every_own_message_offers_the_inline_edit(signed_in, conversation, three_turns):
    page = signed_in.get(reverse("chat_conversation", args=[conversation.pk])).content.decode()
    for message in three_turns[::2]:
        assert reverse("chat_message_edit", args=[message.pk]) in page
    assert reverse("chat_message_edit", args=[three_turns[1].pk]) not in page


# --- REST -------------------------------------------------------------------------------


def test_rest_attaches_into_the_own_collection_and_refuses_like_the_page(
    signed_in, person, conversation, settings
):
    url = f"/api/chat/conversations/{conversation.pk}/attachments"
    response = signed_in.post(url, {"documents": [SimpleUploadedFile("zoo.md", b"Tapirs.")]})
    assert response.status_code == 201, response.content
    body = response.json()
    conversation.refresh_from_db()
    assert body["store_id"] == conversation.own_store_id and body["name"] == "zoo.md"
    assert body["state"] == Job.State.QUEUED
    settings.KNOWLEDGE_UPLOAD_MAX_FILE_BYTES = 3
    refused = signed_in.post(url, {"documents": [SimpleUploadedFile("big.md", b"Too big.")]})
    assert refused.status_code == 400 and "big.md" in refused.json()["detail"]


def test_rest_attach_refuses_a_temporary_chat_and_another_persons_conversation(
    signed_in, person, profile, stranger
):
    temporary = conversation_create(user=person, temporary=True)
    theirs = Conversation.objects.create(
        owner=stranger, ai_profile=AIProfileFactory(owner=stranger)
    )
    files = {"documents": [SimpleUploadedFile("a.md", b"Hello.")]}
    response = signed_in.post(f"/api/chat/conversations/{temporary.pk}/attachments", files)
    assert response.status_code == 400 and "temporary chat" in response.json()["detail"]
    files = {"documents": [SimpleUploadedFile("a.md", b"Hello.")]}
    response = signed_in.post(f"/api/chat/conversations/{theirs.pk}/attachments", files)
    assert response.status_code == 404 and not Store.objects.exists()


def test_rest_edit_of_an_earlier_message_answers_in_the_copy(
    signed_in, conversation, three_turns, stranger
):
    api_url = f"/api/chat/messages/{three_turns[2].pk}/edit"
    response = signed_in.post(api_url, {"text": "Better"}, content_type="application/json")
    assert response.status_code == 202, response.content
    copy = Conversation.objects.get(pk=response.json()["conversation"])
    assert copy.edited_from == conversation
    assert _history(copy)[:3] == [
        ("user", "Question 1"),
        ("assistant", "Answer 1"),
        ("user", "Better"),
    ]
    theirs = Conversation.objects.create(
        owner=stranger, ai_profile=AIProfileFactory(owner=stranger)
    )
    message = _turn(theirs, "user", "Theirs")
    response = signed_in.post(
        f"/api/chat/messages/{message.pk}/edit", {"text": "x"}, content_type="application/json"
    )
    assert response.status_code == 404


def test_an_attach_without_a_file_asks_for_one(signed_in, conversation):
    response = signed_in.post(reverse("chat_attach", args=[conversation.pk]), {}, **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and 'id="attach-error"' in body
    assert "Choose at least one file to upload." in body and not Store.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_attachment_with_nothing_readable_says_so_and_offers_no_index(signed_in, conversation):
    broken = SimpleUploadedFile("fake.pdf", b"%PDF-1.4 \x00\x9f not really a pdf \xff" * 40)
    assert _attach(signed_in, conversation, broken, **HTMX).status_code == 200
    scan = _scan(conversation)
    assert scan.state == Job.State.REVIEW
    chips = signed_in.get(reverse("chat_attachments", args=[conversation.pk])).content.decode()
    assert "nothing in it can be indexed" in chips
    assert "fake.pdf is left out" in chips
    assert "Index it" not in chips and "the next answer can use it" not in chips
