"""Past-chat search (B10): one search over a person's own conversations, keyword and meaning.

Every entry point calls `conversations_search`: the conversation list's search box, REST
`GET /api/chat/conversations?q=`, and the `search_conversations` model tool (the chat,
REST `/api/memory/tools/call`, MCP). Only the person's own conversations are searched;
temporary chats (M22) and ended ones never are.

Messages are embedded by a Celery job after they are stored (never while a page or
turn waits), with the same embedder as memory notes; until a conversation has vectors,
or when no embedder is there, the search is by keyword alone.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction

from accounts.models import User
from chat.models import Conversation, Message, MessageEmbedding
from host.core.fulltext import or_query, snippet
from host.core.fusion import fuse_weighted
from host.core.untrusted import wrap_untrusted
from host.embeddings import Embedder, EmbeddingUnavailable
from host.errors import ChangeRefused, NotAllowed
from host.outbound import release_db_connection
from host.queue import queue_once_on_commit, queued_run_started
from memory_addon.core.operations import text_argument
from memory_addon.services.context import memory_readable
from memory_addon.services.note_search import note_embedder
from memory_addon.services.tools import ToolArgs, ToolSchema
from memory_addon.turns import Turn

logger = logging.getLogger(__name__)

TOOL_NAME = "search_conversations"
MAX_QUERY_CHARS = 500
MAX_RESULTS = 10
DEFAULT_TOOL_RESULTS = 5
CANDIDATES = 50
SNIPPET_WIDTH = 120  # a snippet is at most twice this, plus " …"
# A very long answer is embedded by its beginning: enough to find it by meaning.
EMBEDDED_CHARS = 8000

SEARCH_TOOL: ToolSchema = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": (
            "Search the person's own earlier conversations by words and meaning. Returns "
            "hits [C1], [C2] … with title, date, a snippet and a link; cite a hit as [C1]."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_QUERY_CHARS,
                    "description": "What to look for, in a few words.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_RESULTS,
                    "description": (
                        f"How many conversations at most (default {DEFAULT_TOOL_RESULTS})."
                    ),
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
}

# The header line of each hit in the tool's result; the page reads it back to link [Cn].
_HIT_LINE = re.compile(r"^\[C(\d{1,2})\] (.*) — \d{4}-\d\d-\d\d — /chat/(\d+)/$", re.MULTILINE)


@dataclass(frozen=True)
class ConversationHit:
    conversation: Conversation
    snippet: str

    @property
    def link(self) -> str:
        return f"/chat/{self.conversation.pk}/"


def _like_pattern(query: str) -> str:
    escaped = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _keyword(
    user_id: int, query: str, exclude: int, limit: int
) -> tuple[list[tuple[int, float]], dict[int, int]]:
    """Conversations whose title or messages hold a word of `query` (or the query as a
    part of a word, as the list's search always found), best first, and the best
    message of each."""
    ts_query = or_query(query)
    pattern = _like_pattern(query.strip())
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.id, best.id,
                   COALESCE(best.rank, 0)
                   + CASE WHEN c.title ILIKE %s
                          OR to_tsvector('simple', c.title) @@ to_tsquery('simple', %s)
                     THEN 1 ELSE 0 END AS score
            FROM chat_conversation c
            LEFT JOIN LATERAL (
                SELECT m.id,
                       ts_rank(to_tsvector('simple', m.content), to_tsquery('simple', %s))
                       + CASE WHEN m.content ILIKE %s THEN 0.1 ELSE 0 END AS rank
                FROM chat_message m
                WHERE m.conversation_id = c.id
                  AND (to_tsvector('simple', m.content) @@ to_tsquery('simple', %s)
                       OR m.content ILIKE %s)
                ORDER BY rank DESC, m.id LIMIT 1
            ) best ON true
            -- only the person's own conversations that may be found
            WHERE c.owner_id = %s AND NOT c.temporary AND c.closed_at IS NULL AND c.id <> %s
              AND (best.id IS NOT NULL OR c.title ILIKE %s
                   OR to_tsvector('simple', c.title) @@ to_tsquery('simple', %s))
            ORDER BY score DESC, c.updated_at DESC, c.id DESC LIMIT %s
            """,
            [
                pattern,
                ts_query,
                ts_query,
                pattern,
                ts_query,
                pattern,
                user_id,
                exclude,
                pattern,
                ts_query,
                limit,
            ],
        )
        rows = cursor.fetchall()
    ranking = [(conversation_id, float(score)) for conversation_id, _, score in rows]
    best = {conversation_id: message_id for conversation_id, message_id, _ in rows if message_id}
    return ranking, best


def _vector(
    user_id: int, exclude: int, embedder: Embedder, vector: list[float], limit: int
) -> tuple[list[tuple[int, float]], dict[int, int]]:
    """Conversations by their nearest message, above the collections' relevance floor."""
    literal = "[" + ",".join(f"{x:.7g}" for x in vector) + "]"
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT m.conversation_id, m.id, 1 - (e.vector <=> %s::vector) AS similarity
            FROM chat_messageembedding e
            JOIN chat_message m ON m.id = e.message_id
            JOIN chat_conversation c ON c.id = m.conversation_id
            WHERE e.owner_id = %s AND c.owner_id = e.owner_id
              AND NOT c.temporary AND c.closed_at IS NULL AND c.id <> %s
              AND e.model_name = %s AND e.dimension = %s
            ORDER BY e.vector <=> %s::vector LIMIT %s
            """,
            [
                literal,
                user_id,
                exclude,
                embedder.model_name,
                embedder.dimension,
                literal,
                limit,
            ],
        )
        rows = cursor.fetchall()
    if not rows:
        return [], {}
    top = max(float(similarity) for _, _, similarity in rows)
    floor = max(settings.KNOWLEDGE_MIN_SIMILARITY, top * settings.KNOWLEDGE_RELATIVE_SIMILARITY)
    ranking: list[tuple[int, float]] = []
    best: dict[int, int] = {}
    for conversation_id, message_id, similarity in rows:
        if float(similarity) < floor or conversation_id in best:
            continue  # below the floor, or a nearer message of it came first
        best[conversation_id] = message_id
        ranking.append((conversation_id, float(similarity)))
    return ranking, best


def _query_vector(user: User, query: str) -> tuple[Embedder, list[float]] | None:
    embedder = note_embedder(user.pk, for_query=True)
    if embedder is None:
        return None
    try:
        release_db_connection()  # an embeddings server may be slow to answer
        return embedder, embedder.embed([query])[0]
    except EmbeddingUnavailable as error:
        logger.warning("Embedding a past-chat query failed; keyword search only: %s", error)
        return None


def conversations_search(
    user: User, query: str, limit: int = MAX_RESULTS, exclude_conversation: int | None = None
) -> list[ConversationHit]:
    """The person's own conversations that match `query` by words or meaning, best
    first, each with the snippet of its best matching message."""
    query = query.strip()[:MAX_QUERY_CHARS]
    if not query:
        return []
    limit = max(1, min(limit, 200))
    exclude = exclude_conversation or 0
    keyword, best = _keyword(user.pk, query, exclude, max(limit, CANDIDATES))
    lists = [(keyword, settings.KNOWLEDGE_FUSION_KEYWORD_WEIGHT)]
    embedded = MessageEmbedding.objects.filter(owner=user).exists()
    found = _query_vector(user, query) if embedded else None
    if found is not None:
        meaning, nearest = _vector(user.pk, exclude, *found, CANDIDATES)
        lists.append((meaning, settings.KNOWLEDGE_FUSION_VECTOR_WEIGHT))
        best = nearest | best  # a message that holds the words makes the better snippet
    ordered = fuse_weighted(lists, method=settings.KNOWLEDGE_FUSION, k=settings.KNOWLEDGE_RRF_K)
    ordered = ordered[:limit]
    conversations = Conversation.objects.filter(
        pk__in=ordered, owner=user, temporary=False, closed_at__isnull=True
    ).in_bulk()
    texts = dict(
        Message.objects.filter(pk__in=[best[i] for i in ordered if i in best]).values_list(
            "pk", "content"
        )
    )
    return [
        ConversationHit(
            conversations[i],
            snippet(texts.get(best.get(i, 0), ""), query, width=SNIPPET_WIDTH),
        )
        for i in ordered
        if i in conversations
    ]


# --- the model tool ---------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(text.split())


def search_conversations_tool(turn: Turn, args: ToolArgs) -> str:
    """The tool's handler: run by memory's tool executor after its argument gate."""
    reason = memory_readable(turn)
    if reason:
        raise NotAllowed(reason)
    if turn.agent and not turn.agent.memory_allowed:
        raise NotAllowed("The Memory add-on is not allowed for this agent.")
    if turn.binding:
        # Others may read a messaging app's chat: the person's other chats stay private.
        raise NotAllowed("Past chats are not searched from a messaging app's conversation.")
    query = text_argument(args, "query").strip()
    if not query:
        raise ChangeRefused("'query' is empty: give a few words to search for.")
    limit = args.get("limit")
    # The host's own chat names its conversation: it is never its own result.
    current = (
        int(turn.conversation_ref)
        if turn.reply_ref_trusted and turn.conversation_ref.isdigit()
        else None
    )
    hits = conversations_search(
        turn.user,
        query,
        limit=int(limit) if isinstance(limit, int | float) else DEFAULT_TOOL_RESULTS,
        exclude_conversation=current,
    )
    if not hits:
        return f"No earlier conversation matches {query!r}."
    lines = [f"Earlier conversations matching {query!r}; cite them as [C1], [C2] …"]
    for number, hit in enumerate(hits, start=1):
        title = _one_line(str(hit.conversation))[:200]
        date = hit.conversation.updated_at.date().isoformat()
        lines.append(f"[C{number}] {title} — {date} — {hit.link}")
        lines.append(wrap_untrusted("past_chat", hit.snippet, attrs={"hit": f"C{number}"}).text)
    return "\n".join(lines)


def conversation_citations(message: Message) -> dict[int, tuple[int, str]]:
    """[Cn] marker → (conversation id, title), from this answer's search_conversations
    results; a later search of the same answer wins for a number both used."""
    links: dict[int, tuple[int, str]] = {}
    for call in message.tool_calls:
        if call.get("name") == TOOL_NAME and call.get("ok"):
            for number, title, target in _HIT_LINE.findall(str(call.get("result", ""))):
                links[int(number)] = (int(target), title)
    return links


# --- embedding messages in the background ------------------------------------


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def message_embeddings_refresh(*, conversation_id: int) -> int:
    """Embed the conversation's stored messages whose text has no vector yet; safe to
    run twice. No connection is held while the embedder works."""
    conversation = Conversation.objects.filter(pk=conversation_id).first()
    if conversation is None or conversation.temporary:
        return 0  # gone, or a temporary chat: never embedded
    stale = []
    rows = (
        Message.objects.filter(conversation=conversation, state=Message.State.COMPLETE)
        .exclude(content="")
        .select_related("embedding")
    )
    for row in rows:
        text = row.content[:EMBEDDED_CHARS]
        if not hasattr(row, "embedding") or row.embedding.sha256 != _sha(text):
            stale.append((row.pk, text))
    if not stale:
        return 0
    embedder = note_embedder(conversation.owner_id)
    if embedder is None:
        return 0
    release_db_connection()
    vectors = embedder.embed([text for _, text in stale])
    with transaction.atomic(durable=True):
        existing = set(
            Message.objects.filter(
                pk__in=[pk for pk, _ in stale], conversation__temporary=False
            ).values_list("pk", flat=True)
        )
        for (message_id, text), vector in zip(stale, vectors, strict=True):
            if message_id not in existing:  # deleted meanwhile
                continue
            MessageEmbedding.objects.update_or_create(
                message_id=message_id,
                defaults={
                    "owner_id": conversation.owner_id,
                    "model_name": embedder.model_name,
                    "dimension": embedder.dimension,
                    "sha256": _sha(text),
                    "vector": vector,
                },
            )
    return len(existing)


def message_embeddings_queue(conversation_id: int) -> None:
    """One refresh waiting per conversation, queued once the message is committed."""
    if settings.CHAT_MESSAGE_EMBEDDINGS_ON_WRITE:
        queue_once_on_commit(
            "chat.message_embeddings_refresh",
            f"message-embeddings:{conversation_id}",
            conversation_id,
        )


def message_embeddings_started(conversation_id: int) -> None:
    """A message stored after this point queues the next refresh."""
    queued_run_started(f"message-embeddings:{conversation_id}")


def message_stored(sender: object, *, instance: Message, created: bool, **_signal: object) -> None:
    """post_save: a person's new message (every path stores it with create)."""
    if not settings.CHAT_MESSAGE_EMBEDDINGS_ON_WRITE or not created:
        return
    if instance.role == Message.Role.USER and not instance.conversation.temporary:
        message_embeddings_queue(instance.conversation_id)


def answer_completed(sender: object, *, answer_id: int, **_signal: object) -> None:
    if not settings.CHAT_MESSAGE_EMBEDDINGS_ON_WRITE:
        return
    conversation_id = (
        Message.objects.filter(pk=answer_id).values_list("conversation_id", flat=True).first()
    )
    if conversation_id is not None:
        message_embeddings_queue(conversation_id)
