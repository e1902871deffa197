"""The embedding model of a collection: built from its provider, checked against its index."""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext as _

from accounts.models import AIProfile
from host.embeddings import (
    Embedder,
    EmbeddingUnavailable,
    OpenAIEmbedder,
    local_dimension,
    local_embedder,
)
from host.local_model import PACKAGED_MODELS
from knowledge.errors import IndexMismatch, KnowledgeRefusal
from knowledge.models import Store


def local_models() -> list[str]:
    """The local models a collection may use: the packaged ones and EMBEDDING_MODEL."""
    return list(dict.fromkeys((*PACKAGED_MODELS, settings.EMBEDDING_MODEL)))


def local_model_check(model_name: str) -> str:
    """The local model a new collection uses (the default when none is named)."""
    model_name = model_name or settings.KNOWLEDGE_EMBEDDING_MODEL
    if model_name not in local_models():
        raise KnowledgeRefusal(
            _("model_name: choose one of the local models: %(models)s.")
            % {"models": ", ".join(local_models())}
        )
    return model_name


def embedder_build(*, provider: str, model_name: str, ai_profile: AIProfile | None) -> Embedder:
    if provider == Store.Provider.FASTEMBED:
        # No choice check here: an existing collection's model that is gone since is an
        # EmbeddingUnavailable (keyword search answers), not a refusal of its queries.
        return local_embedder(model_name or settings.KNOWLEDGE_EMBEDDING_MODEL)
    if provider == Store.Provider.OPENAI:
        if ai_profile is None:
            raise KnowledgeRefusal(
                _("Choose an AI profile with the embedding role for this server.")
            )
        return OpenAIEmbedder(
            base_url=ai_profile.base_url,
            model_name=model_name or ai_profile.model,
            api_key=ai_profile.api_key,
        )
    raise KnowledgeRefusal(
        _("Unknown embedding provider %(provider)s.") % {"provider": repr(provider)}
    )


def store_embedder(store: Store, *, for_query: bool = False) -> Embedder | None:
    """The store's embedder, or None for keyword-only stores. A mismatch is refused.

    `for_query`: a person waits for it, so one short attempt; on failure retrieval
    answers from keywords instead of keeping the request (and a worker) waiting.
    """
    if not store.semantic:
        return None
    if store.provider == Store.Provider.OPENAI:
        profile = store.ai_profile
        if profile is None:
            raise IndexMismatch(
                "The AI profile of this collection was deleted; rebuild it with another."
            )
        embedder: Embedder = OpenAIEmbedder(
            base_url=profile.base_url,
            model_name=profile.model,
            api_key=profile.api_key,
            dimension=store.dimension if profile.model == store.model_name else None,
            # A person waits for a query: one short attempt, then keyword search.
            timeout=settings.EMBEDDING_QUERY_TIMEOUT_SECONDS if for_query else 30.0,
            attempts=1 if for_query else 3,
        )
    else:
        embedder = embedder_build(
            provider=store.provider, model_name=store.model_name, ai_profile=None
        )
    if embedder.model_name != store.model_name or embedder.dimension != store.dimension:
        raise IndexMismatch(
            f"This collection was indexed with {store.model_name} ({store.dimension} dimensions) "
            f"but the configured model is {embedder.model_name} ({embedder.dimension}). "
            "Rebuild the collection to use the new model."
        )
    return embedder


def semantic_status(model_name: str = "") -> str:
    """Empty when the local model (by default new collections' one) is there; otherwise
    why semantic search is off and how to fix it. Does not load the model."""
    try:
        local_dimension(model_name or settings.KNOWLEDGE_EMBEDDING_MODEL)
    except EmbeddingUnavailable as error:
        return str(error)
    return ""
