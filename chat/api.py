"""Chat over JSON: the same services and owner checks as the pages."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import File, Router, Status, UploadedFile

from accounts.auth import signed_in_user
from chat import attachments, questions, services
from chat.models import Conversation, Message, Question
from chat.schemas import (
    AnswerErrorOut,
    AttachmentOut,
    ConversationDetailOut,
    ConversationIn,
    ConversationOut,
    ErrorOut,
    MessageIn,
    MessageOut,
    QuestionAnswerIn,
    QuestionOut,
)
from chat.selectors import (
    conversation_for_user,
    conversations_listed,
    message_for_user,
    question_for_user,
    questions_waiting_for,
)

router = Router(tags=["chat"])


@router.get("/conversations", response=list[ConversationOut], summary="List conversations")
def conversations_list(request: HttpRequest, q: str = "") -> list[Conversation]:
    """Newest first; with `q`, the best matches first, by words or meaning (B10)."""
    return conversations_listed(signed_in_user(request), q, 200)


@router.post(
    "/conversations",
    response={201: ConversationOut, 400: ErrorOut},
    summary="Start a conversation",
)
def conversation_create(request: HttpRequest, payload: ConversationIn) -> Status[Conversation]:
    conversation = services.conversation_create(
        user=signed_in_user(request),
        profile_id=payload.profile_id,
        agent_id=payload.agent_id,
        store_ids=payload.store_ids,
        memory_on=payload.memory_on,
        title=payload.title,
        temporary=payload.temporary,
    )
    return Status(201, conversation)


@router.get(
    "/conversations/{conversation_id}",
    response={200: ConversationDetailOut, 404: ErrorOut},
    summary="A conversation with its messages",
)
def conversation_detail(request: HttpRequest, conversation_id: int) -> dict[str, object]:
    conversation = conversation_for_user(signed_in_user(request), conversation_id)
    return {"conversation": conversation, "messages": list(conversation.messages.all())}


@router.delete(
    "/conversations/{conversation_id}",
    response={204: None, 404: ErrorOut},
    summary="Delete a conversation",
)
def conversation_delete(request: HttpRequest, conversation_id: int) -> Status[None]:
    conversation = conversation_for_user(signed_in_user(request), conversation_id)
    services.conversation_delete(conversation=conversation)
    return Status(204, None)


@router.post(
    "/conversations/{conversation_id}/end",
    response={204: None, 400: ErrorOut, 404: ErrorOut},
    summary="End a temporary chat (M22): it is deleted",
)
def temporary_end(request: HttpRequest, conversation_id: int) -> Status[None]:
    """An answer still being written is stopped, and the chat goes once it ended;
    meanwhile it is a 404 like a deleted one."""
    conversation = conversation_for_user(signed_in_user(request), conversation_id)
    services.temporary_conversation_end(conversation=conversation)
    return Status(204, None)


@router.post(
    "/conversations/{conversation_id}/messages",
    response={202: MessageOut, 400: ErrorOut, 404: ErrorOut, 429: ErrorOut},
    summary="Send a message; the answer is written in the background",
)
def message_send(request: HttpRequest, conversation_id: int, payload: MessageIn) -> Status[Message]:
    """Returns the answer in state `streaming`; poll it or watch the websocket."""
    user = signed_in_user(request)
    conversation = conversation_for_user(user, conversation_id)
    return Status(
        202, services.message_send(user=user, conversation=conversation, text=payload.text)
    )


@router.post(
    "/conversations/{conversation_id}/attachments",
    response={201: AttachmentOut, 400: ErrorOut, 404: ErrorOut},
    summary="Attach files: into the conversation's own collection, checked like any upload",
)
def conversation_attach(
    request: HttpRequest, conversation_id: int, documents: File[list[UploadedFile]]
) -> Status[AttachmentOut]:
    """Multipart field `documents`. The collection page's size cap, formats and review
    apply: the scan waits for a review before anything is indexed (confirm it under
    `/api/knowledge/`). A temporary chat refuses attachments."""
    user = signed_in_user(request)
    conversation = conversation_for_user(user, conversation_id)
    source = attachments.conversation_attach(
        user=user, conversation=conversation, files=list(documents)
    )
    job = source.jobs.order_by("-pk").first()
    return Status(
        201,
        AttachmentOut(
            store_id=source.store_id,
            source_id=source.pk,
            job_id=job.pk if job else None,
            name=source.label,
            state=job.state if job else "",
        ),
    )


@router.post(
    "/messages/{message_id}/edit",
    response={202: MessageOut, 400: ErrorOut, 404: ErrorOut, 429: ErrorOut},
    summary="Edit one of your messages and answer it again",
)
def message_edit(request: HttpRequest, message_id: int, payload: MessageIn) -> Status[Message]:
    """The last message is changed in place; an earlier one starts a new conversation
    (`conversation` of the answer) with the history before it, the original untouched."""
    user = signed_in_user(request)
    message = message_for_user(user, message_id)
    return Status(202, services.message_edit(user=user, message=message, text=payload.text))


@router.get(
    "/messages/{message_id}", response={200: MessageOut, 404: ErrorOut}, summary="One message"
)
def message_detail(request: HttpRequest, message_id: int) -> Message:
    return message_for_user(signed_in_user(request), message_id)


@router.post(
    "/messages/{message_id}/stop",
    response={202: MessageOut, 404: ErrorOut},
    summary="Stop an answer being written",
)
def message_stop(request: HttpRequest, message_id: int) -> Status[Message]:
    message = message_for_user(signed_in_user(request), message_id)
    services.message_stop(message=message)
    return Status(202, message)


@router.get(
    "/questions", response=list[QuestionOut], summary="Questions waiting for your answer (M19)"
)
def questions_waiting(request: HttpRequest) -> list[Question]:
    """Oldest first; each belongs to an answer in state `waiting`."""
    return questions_waiting_for(signed_in_user(request))


@router.post(
    "/questions/{question_id}/answer",
    response={200: QuestionOut, 400: AnswerErrorOut, 404: ErrorOut, 409: ErrorOut},
    summary="Answer a question; the answer it belongs to goes on in the background",
)
def question_answer(request: HttpRequest, question_id: int, payload: QuestionAnswerIn) -> Question:
    """A refusal names the `field` to fix (choice, rule, save_to); nothing is saved then."""
    user = signed_in_user(request)
    question = question_for_user(user, question_id)
    return questions.question_answer(
        user=user,
        question_id=question.pk,
        choice=payload.choice,
        other=payload.other,
        rule=payload.rule,
        save_to=payload.save_to,
    )
