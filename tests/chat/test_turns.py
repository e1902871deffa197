"""A turn against the local fake OpenAI server: every path ends in an honest stored state."""

from __future__ import annotations

import json

import pytest

from addons.services import addon_setting_put
from chat.models import Message
from chat.prompt import SYSTEM
from chat.runner import turn_run
from chat.services import stop_request
from memory_addon.addons import MEMORY_ADDON, SAVE_MODE
from memory_addon.core import entries
from memory_addon.models import ChangeSet, MemoryFile, Proposal
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_user_scope

pytestmark = pytest.mark.django_db(transaction=True)

ADD_HOME = json.dumps({"action": "add", "text": "- home: lives in Rome -> home.md"})


def run(message: Message) -> Message:
    turn_run(message_id=message.pk)
    message.refresh_from_db()
    return message


def test_a_scripted_stream_is_stored_complete_with_usage_and_timing(fake_openai, ask):
    fake_openai.chat_replies.append(
        {
            "deltas": ["Hello", ", ", "world", "!"],
            "usage": {"prompt_tokens": 7, "completion_tokens": 4, "total_tokens": 11},
        }
    )
    answer = run(ask("Say hello"))
    assert answer.state == Message.State.COMPLETE
    assert answer.content == "Hello, world!"
    assert answer.usage == {"prompt_tokens": 7, "completion_tokens": 4, "total_tokens": 11}
    assert answer.model == "fake-model"
    assert answer.first_token_at and answer.finished_at and answer.duration_ms is not None
    request = fake_openai.chat_requests[-1]
    assert request["stream"] is True
    assert request["messages"][-1] == {"role": "user", "content": "Say hello"}
    assert {tool["function"]["name"] for tool in request["tools"]} >= {"propose_change"}


def test_the_memory_block_follows_the_system_prompt_and_sent_along_records_it(
    fake_openai, ask, person
):
    file_write(
        user=person,
        scope=ensure_user_scope(person),
        path="index.md",
        content="- diet: vegetarian -> diet.md\n",
        base_sha256="",
    )
    answer = run(ask("What should I cook?"))
    system, memory = fake_openai.chat_requests[-1]["messages"][:2]
    assert system == {"role": "system", "content": SYSTEM}
    assert memory["role"] == "user"
    assert "<memory>" in memory["content"] and "vegetarian" in memory["content"]
    items = answer.sent_along["memory"]["items"]
    assert [(i["origin"], "vegetarian" in i["text"]) for i in items] == [("user", True)]
    assert items[0]["tokens"] > 0
    assert answer.sent_along["memory"]["omitted"] == 0


def test_a_tool_call_creates_a_proposal_and_the_model_gets_the_result(fake_openai, ask, person):
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": ADD_HOME}]},
        {"content": "I asked to remember that you live in Rome."},
    ]
    answer = run(ask("Remember that I live in Rome"))
    assert answer.state == Message.State.COMPLETE
    assert answer.content == "I asked to remember that you live in Rome."
    proposal = Proposal.objects.get(user=person)
    assert proposal.state == Proposal.State.PENDING
    assert proposal.conversation_ref == str(answer.conversation_id)
    assert proposal.message_ref == str(answer.pk)
    assert answer.tool_calls[0]["name"] == "propose_change" and answer.tool_calls[0]["ok"]
    second = fake_openai.chat_requests[-1]["messages"]
    assert second[-2]["tool_calls"][0]["id"] == "c1"
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "c1"
    assert "Proposed" in second[-1]["content"]


def test_parallel_tool_calls_are_all_executed_in_one_round(fake_openai, ask, person):
    fake_openai.chat_replies += [
        {
            "tool_calls": [
                {"id": "a", "name": "propose_change", "arguments": ADD_HOME},
                {
                    "id": "b",
                    "name": "propose_change",
                    "arguments": json.dumps({"action": "add", "text": "- tea: likes green tea"}),
                },
                {"id": "c", "name": "list_memory", "arguments": json.dumps({"query": "rome"})},
            ]
        },
        {"content": "Done."},
    ]
    answer = run(ask("Remember Rome and tea"))
    assert answer.state == Message.State.COMPLETE
    assert [c["id"] for c in answer.tool_calls] == ["a", "b", "c"]
    assert Proposal.objects.filter(user=person, message_ref=str(answer.pk)).count() == 2
    tool_messages = [m for m in fake_openai.chat_requests[-1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["a", "b", "c"]


def test_malformed_tool_arguments_go_back_to_the_model_as_a_refusal(fake_openai, ask, person):
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "x", "name": "propose_change", "arguments": '{"action": "add", '}]},
        {"content": "Sorry, I could not save that."},
    ]
    answer = run(ask("Remember it"))
    assert answer.state == Message.State.COMPLETE
    assert answer.tool_calls[0]["ok"] is False
    assert "not valid JSON" in answer.tool_calls[0]["result"]
    assert not Proposal.objects.filter(user=person).exists()
    assert "not valid JSON" in fake_openai.chat_requests[-1]["messages"][-1]["content"]


def test_auto_mode_saves_at_once_and_records_the_change_for_undo(fake_openai, ask, person):
    addon_setting_put(user=person, addon=MEMORY_ADDON, key=SAVE_MODE, value="auto")
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": ADD_HOME}]},
        {"content": "Saved."},
    ]
    answer = run(ask("Remember that I live in Rome"))
    change = ChangeSet.objects.get(user=person, origin=ChangeSet.Origin.AUTOMATIC)
    assert change.message_ref == str(answer.pk)
    index = MemoryFile.objects.get(scope=ensure_user_scope(person), path="index.md").content
    assert [e.text for e in entries.machine_entries(index)] == ["- home: lives in Rome -> home.md"]


def test_tool_rounds_stop_after_the_limit_and_the_last_round_has_no_tools(
    fake_openai, ask, settings
):
    settings.CHAT_MAX_TOOL_ROUNDS = 3
    call = {"name": "list_memory", "arguments": json.dumps({"query": "x"})}
    fake_openai.chat_replies += [
        {"tool_calls": [call]},
        {"tool_calls": [call]},
        {"content": "Fine."},
    ]
    answer = run(ask("Loop"))
    assert answer.state == Message.State.COMPLETE and answer.content == "Fine."
    assert len(fake_openai.chat_requests) == 3
    assert "tools" not in fake_openai.chat_requests[-1]


def test_a_429_is_retried_after_retry_after_and_then_succeeds(fake_openai, ask):
    fake_openai.chat_replies += [{"status": 429, "retry_after": "0"}, {"content": "Second try."}]
    answer = run(ask("Hi"))
    assert answer.state == Message.State.COMPLETE and answer.content == "Second try."
    assert len(fake_openai.chat_requests) == 2


def test_a_500_is_not_retried_and_the_answer_fails_with_the_reason(fake_openai, ask):
    fake_openai.chat_replies += [{"status": 500, "message": "model crashed"}, {"content": "never"}]
    answer = run(ask("Hi"))
    assert answer.state == Message.State.FAILED
    assert "failed (500)" in answer.error and "model crashed" in answer.error
    assert len(fake_openai.chat_requests) == 1


def test_a_503_is_retried(fake_openai, ask):
    fake_openai.chat_replies += [{"status": 503}, {"content": "Back."}]
    assert run(ask("Hi")).content == "Back."


def test_a_bad_key_says_so(fake_openai, ask):
    fake_openai.chat_replies.append({"status": 401, "message": "invalid api key"})
    answer = run(ask("Hi"))
    assert answer.state == Message.State.FAILED and "refused the API key" in answer.error


def test_an_unknown_model_says_so(fake_openai, ask):
    fake_openai.chat_replies.append({"status": 404, "message": "model not found"})
    answer = run(ask("Hi"))
    assert answer.state == Message.State.FAILED and "does not know the model" in answer.error


def test_a_timeout_fails_the_answer_honestly(fake_openai, ask, settings):
    settings.CHAT_READ_TIMEOUT_SECONDS = 1
    fake_openai.chat_replies.append({"stall": 10, "content": "too late"})
    answer = run(ask("Hi"))
    fake_openai.chat_gate.set()
    assert answer.state == Message.State.FAILED
    assert "did not answer in time" in answer.error


def test_a_stream_cut_in_the_middle_keeps_the_text_and_is_marked_failed(fake_openai, ask):
    fake_openai.chat_replies.append({"deltas": ["Part one", " and part", " two"], "cut_after": 2})
    answer = run(ask("Hi"))
    assert answer.state == Message.State.FAILED
    assert answer.content == "Part one and part"
    assert "cut off" in answer.error or "ended before" in answer.error


def test_a_malformed_stream_is_a_failed_answer(fake_openai, ask):
    fake_openai.chat_replies.append({"deltas": ["A", "B"], "malformed_after": 1})
    answer = run(ask("Hi"))
    assert answer.state == Message.State.FAILED and "malformed" in answer.error


def test_context_too_long_says_what_to_do(fake_openai, ask):
    fake_openai.chat_replies.append(
        {
            "status": 400,
            "code": "context_length_exceeded",
            "message": "This model's maximum context length is 8192 tokens.",
        }
    )
    answer = run(ask("Hi"))
    assert answer.state == Message.State.FAILED
    assert "too long for this model's context window" in answer.error


def test_an_unreachable_server_fails_with_its_address(ask, conversation):
    conversation.ai_profile.base_url = "http://127.0.0.1:9/v1"
    conversation.ai_profile.save()
    answer = run(ask("Hi"))
    assert answer.state == Message.State.FAILED and "unreachable" in answer.error


def test_older_messages_are_trimmed_to_the_window_but_never_the_current_one(
    fake_openai, ask, conversation
):
    conversation.ai_profile.context_window = 1024
    conversation.ai_profile.save()
    for number in range(6):
        Message.objects.create(
            conversation=conversation, role="user", content=f"old {number} " + "x" * 400
        )
        Message.objects.create(conversation=conversation, role="assistant", content="noted")
    answer = run(ask("The current question"))
    sent = fake_openai.chat_requests[-1]["messages"]
    assert sent[-1]["content"] == "The current question"
    assert answer.sent_along["history"]["trimmed"] > 0
    assert not any("old 0" in m["content"] for m in sent if m["role"] == "user")


def test_a_profile_without_tools_gets_the_memory_block_only(fake_openai, ask, conversation):
    conversation.ai_profile.supports_tools = False
    conversation.ai_profile.save()
    answer = run(ask("Hi"))
    assert "tools" not in fake_openai.chat_requests[-1]
    assert answer.sent_along["tools"] is False and answer.sent_along["tools_note"]


def test_memory_off_sends_no_memory_and_no_tools(fake_openai, ask, conversation, person):
    file_write(
        user=person,
        scope=ensure_user_scope(person),
        path="index.md",
        content="- secret-ish note\n",
        base_sha256="",
    )
    conversation.memory_on = False
    conversation.save()
    answer = run(ask("Hi"))
    request = fake_openai.chat_requests[-1]
    assert "secret-ish" not in fake_openai.prompt()
    # No memory tool; asking the person (M19) needs no memory.
    assert [tool["function"]["name"] for tool in request["tools"]] == ["ask_person"]
    assert answer.sent_along["memory"]["off"] == "Memory is off for this request."


def test_stop_before_the_first_chunk_stores_a_stopped_answer(fake_openai, ask):
    answer = ask("Hi")
    stop_request(answer)
    answer = run(answer)
    assert answer.state == Message.State.STOPPED


def test_a_redelivered_job_marks_the_half_answer_failed_instead_of_resuming(fake_openai, ask):
    from django.utils import timezone

    answer = ask("Hi")
    Message.objects.filter(pk=answer.pk).update(started_at=timezone.now(), content="Half an ans")
    answer = run(answer)
    assert answer.state == Message.State.FAILED
    assert answer.content == "Half an ans"
    assert "incomplete" in answer.error
    assert fake_openai.chat_requests == []


def test_stop_answers_within_a_second_even_while_the_model_sends_nothing(fake_openai, ask):
    import threading

    fake_openai.chat_replies.append({"deltas": ["Thinking", " hard", " ..."], "gate_after": 1})
    answer = ask("Hi")
    worker = threading.Thread(target=turn_run, kwargs={"message_id": answer.pk})
    worker.start()
    assert fake_openai.reached_gate.wait(timeout=30)
    stop_request(answer)
    worker.join(timeout=1.5)
    alive = worker.is_alive()
    fake_openai.chat_gate.set()
    worker.join(timeout=30)
    assert not alive, "the answer did not stop within a second while the model was silent"
    answer.refresh_from_db()
    assert answer.state == Message.State.STOPPED


def test_a_profile_pointing_into_the_internal_network_is_refused_without_a_call(
    fake_openai, ask, conversation
):
    conversation.ai_profile.base_url = "http://10.0.0.7:8080/v1"
    conversation.ai_profile.save()
    answer = run(ask("Hi"))
    assert answer.state == Message.State.FAILED
    assert "private or internal network" in answer.error
    assert fake_openai.chat_requests == []


@pytest.mark.parametrize(
    ("sent", "stored"), [("x\u0000y z", "x\ufffdy z"), ("x \ud800 z", "x \ufffd z")]
)
def test_a_nul_or_lone_surrogate_in_the_answer_is_stored_as_a_replacement_character(
    fake_openai, ask, sent, stored
):
    fake_openai.chat_replies.append({"content": sent})
    answer = run(ask("Hi"))
    assert answer.state == Message.State.COMPLETE
    assert answer.content == stored
    assert answer.error == ""


def test_tool_arguments_with_nul_or_lone_surrogates_are_cleaned_before_they_run(
    fake_openai, ask, person
):
    fake_openai.chat_replies += [
        {
            "tool_calls": [
                # A JSON escape inside the arguments, and a raw character in the string.
                {"id": "a", "name": "list_memory", "arguments": json.dumps({"query": "a\u0000b"})},
                {"id": "b", "name": "list_memory", "arguments": '{"query": "c\ud800d"}'},
                {
                    "id": "c",
                    "name": "propose_change",
                    "arguments": json.dumps({"action": "add", "text": "- nul: x\u0000y \udfff"}),
                },
            ]
        },
        {"content": "Done."},
    ]
    answer = run(ask("Search"))
    assert answer.state == Message.State.COMPLETE and answer.content == "Done."
    assert [c["ok"] for c in answer.tool_calls] == [True, True, True]
    assert not any("failed on the server" in c["result"] for c in answer.tool_calls)
    assert "\ufffd" in answer.tool_calls[0]["arguments"]
    assert "\ufffd" in answer.tool_calls[1]["arguments"]
    proposal = Proposal.objects.get(user=person, message_ref=str(answer.pk))
    assert "x\ufffdy \ufffd" in json.dumps(proposal.operations, ensure_ascii=False)


def test_a_model_calling_tools_until_the_round_limit_gets_an_honest_note(fake_openai, ask):
    call = {"name": "list_memory", "arguments": json.dumps({"query": "x"})}
    fake_openai.chat_replies += [{"tool_calls": [{"id": f"c{n}", **call}]} for n in range(40)]
    answer = run(ask("Loop"))
    assert len(fake_openai.chat_requests) == 8
    assert answer.state == Message.State.COMPLETE and answer.content == ""
    assert "kept calling tools" in answer.error and "within 8 rounds" in answer.error
    # The calls of the last round (no tools were offered) are kept as a trace, not run.
    assert len(answer.tool_calls) == 8
    last = answer.tool_calls[-1]
    assert last["round"] == 8 and last["id"] == "c7" and last["ok"] is False
    assert last["result"].startswith("Not run")


def test_an_answer_longer_than_the_limit_is_cut_and_says_so(fake_openai, ask):
    fake_openai.chat_replies.append({"deltas": ["a" * 50_000] * 40})
    answer = run(ask("Write a lot"))
    assert answer.state == Message.State.COMPLETE
    assert answer.content == "a" * 100_000
    assert "cut at the limit of 100,000 characters" in answer.error


def test_only_the_first_tool_calls_of_a_round_run_the_rest_are_refused(fake_openai, ask):
    calls = [
        {"id": f"c{n}", "name": "list_memory", "arguments": json.dumps({"query": "x"})}
        for n in range(200)
    ]
    fake_openai.chat_replies += [{"tool_calls": calls}, {"content": "Done."}]
    answer = run(ask("Many"))
    assert answer.state == Message.State.COMPLETE and answer.content == "Done."
    assert [c["ok"] for c in answer.tool_calls] == [True] * 16 + [False] * 184
    assert "at most 16 tool calls" in answer.tool_calls[16]["result"]
    tool_messages = [m for m in fake_openai.chat_requests[-1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == [f"c{n}" for n in range(200)]
    assert "at most 16 tool calls" in tool_messages[-1]["content"]


TEA = json.dumps({"action": "add", "text": "- I prefer tea over coffee"})


def _first_answer_saves_tea(how: str, fake_openai, ask) -> None:
    """The first answer saves the note; then it is complete, failed, or its job is lost.

    The messages hold no rule cue: a rule detection (run by a worker another test module
    started) would take the scripted replies."""
    fake_openai.chat_replies.append(
        {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": TEA}]}
    )
    fake_openai.chat_replies.append({"status": 400} if how == "retry" else {"content": "Noted."})
    answer = run(ask("Note this: I prefer tea over coffee."))
    if how == "redelivered job":
        # The worker died after the save: the job comes back for an answer still streaming.
        Message.objects.filter(pk=answer.pk).update(state=Message.State.STREAMING)
        run(answer)
    expected = Message.State.COMPLETE if how == "regenerate" else Message.State.FAILED
    assert answer.state == expected


@pytest.mark.parametrize("how", ["regenerate", "retry", "redelivered job"])
def test_answering_again_does_not_save_the_same_note_twice(
    fake_openai, ask, person, conversation, monkeypatch, how
):
    from chat import services as chat_services

    monkeypatch.setattr(chat_services, "_enqueue_on_commit", lambda answer: None)
    addon_setting_put(user=person, addon=MEMORY_ADDON, key=SAVE_MODE, value="auto")
    _first_answer_saves_tea(how, fake_openai, ask)
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c2", "name": "propose_change", "arguments": TEA}]},
        {"content": "Noted again."},
    ]
    again = run(chat_services.answer_regenerate(user=person, conversation=conversation))
    assert again.state == Message.State.COMPLETE, again.error
    index = MemoryFile.objects.get(scope=ensure_user_scope(person), path="index.md").content
    assert [e.text for e in entries.machine_entries(index)] == ["- I prefer tea over coffee"]
    assert ChangeSet.objects.filter(user=person, origin=ChangeSet.Origin.AUTOMATIC).count() == 1
    assert again.tool_calls[0]["ok"]
    told = fake_openai.chat_requests[-1]["messages"][-1]["content"]
    assert "already saved in memory" in told


def test_asking_again_does_not_propose_the_same_note_twice(fake_openai, ask, person):
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": TEA}]},
        {"content": "Shall I?"},
        {"tool_calls": [{"id": "c2", "name": "propose_change", "arguments": TEA}]},
        {"content": "Shall I?"},
    ]
    run(ask("Note this: I prefer tea over coffee."))
    run(ask("Did you note that I prefer tea?"))
    assert Proposal.objects.filter(user=person).count() == 1
    assert (
        "already waits for the person's confirmation"
        in (fake_openai.chat_requests[-1]["messages"][-1]["content"])
    )


def test_saved_to_memory_names_the_note_and_where_with_the_reason_second(
    fake_openai, ask, person, conversation, client
):
    addon_setting_put(user=person, addon=MEMORY_ADDON, key=SAVE_MODE, value="auto")
    with_reason = json.dumps(
        {
            "action": "add",
            "text": "- I prefer tea over coffee",
            "reason": "You asked me to remember it.",
        }
    )
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": with_reason}]},
        {"content": "Noted."},
    ]
    run(ask("Note this: I prefer tea over coffee."))
    client.force_login(person)
    for url in (f"/chat/{conversation.pk}/", "/memory/audit/"):
        html = " ".join(client.get(url).content.decode().split())
        line = (
            "Saved to memory: I prefer tea over coffee → Memory"
            if "chat" in url
            else ("<td>I prefer tea over coffee<br>")
        )
        assert line in html, url
        assert html.index(line) < html.index("You asked me to remember it.")
        assert ">Undo</button>" in html
