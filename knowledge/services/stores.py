"""Collections (stores): create, delete, rebuild for a new model, and their vector index."""

from __future__ import annotations

import functools

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils.translation import gettext as _

from accounts.models import AIProfile, User
from host.embeddings import EmbeddingUnavailable, local_dimension
from host.local_model import PACKAGED_MODELS
from host.outbound import release_db_connection
from knowledge import qdrant
from knowledge.errors import JobBusy, KnowledgeRefusal, StoreGone
from knowledge.models import Document, Job, Source, Store
from knowledge.services.embedders import embedder_build, local_model_check


def store_lock(store: Store) -> Store:
    """Lock the collection's row for the surrounding transaction; a collection deleted
    meanwhile (its page open in another tab, an upload still arriving) is a 404 that
    says so, not a 500."""
    locked = Store.objects.select_for_update().filter(pk=store.pk).first()
    if locked is None:
        raise StoreGone(_("This collection was deleted meanwhile."))
    return locked


def store_create(
    *,
    owner: User,
    name: str,
    provider: str,
    model_name: str = "",
    ai_profile: AIProfile | None = None,
    role_text: bool = True,
    role_coding: bool = False,
    autonomous_opt_in: bool = False,
    language: str = Store.Language.ENGLISH,
    backend: str = Store.Backend.POSTGRES,
    qdrant_url: str = "",
    qdrant_api_key: str = "",
) -> Store:
    name = name.strip()
    in_qdrant = backend == Store.Backend.QDRANT
    qdrant_url = _check_new_store(
        owner=owner,
        name=name,
        provider=provider,
        ai_profile=ai_profile,
        language=language,
        backend=backend,
        qdrant_url=qdrant_url,
    )
    model_name, dimension = _model_and_dimension(
        provider=provider, model_name=model_name, ai_profile=ai_profile
    )
    pending = Store(
        owner=owner,
        backend=backend,
        dimension=dimension,
        qdrant_url=qdrant_url if in_qdrant else "",
        qdrant_collection=qdrant.new_collection_name() if in_qdrant else "",
    )
    pending.qdrant_api_key = qdrant_api_key if in_qdrant else ""
    if in_qdrant:
        qdrant.collection_create(pending)  # first: a store never points at nothing
    try:
        store = _store_insert(
            pending,
            name=name,
            provider=provider,
            model_name=model_name,
            ai_profile=ai_profile,
            role_text=role_text,
            role_coding=role_coding,
            autonomous_opt_in=autonomous_opt_in,
            language=language,
        )
    except BaseException:
        if in_qdrant:
            qdrant.collection_delete(pending)
        raise
    return store


def _check_new_store(
    *,
    owner: User,
    name: str,
    provider: str,
    ai_profile: AIProfile | None,
    language: str,
    backend: str,
    qdrant_url: str,
) -> str:
    """Refuse a collection that could not work; the checked Qdrant address."""
    if not name or not name.isprintable():  # no line breaks, bidi or invisible controls
        raise KnowledgeRefusal(_("Give the collection a name on one plain line."))
    if backend not in Store.Backend.values:
        raise KnowledgeRefusal(_("Choose where the vectors live: postgres or qdrant."))
    if backend == Store.Backend.QDRANT:
        if provider == Store.Provider.NONE:
            raise KnowledgeRefusal(_("A keyword-only collection has no vectors to keep in Qdrant."))
        qdrant_url = qdrant.check_url(qdrant_url)
    if language not in Store.Language.values:
        raise KnowledgeRefusal(
            "Choose the keyword search language: " + ", ".join(Store.Language.values) + "."
        )
    if not name:
        raise KnowledgeRefusal(_("Give the collection a name."))
    if Store.objects.filter(owner=owner, name=name).exists():
        raise _name_taken(name)
    if ai_profile is not None and ai_profile.owner_id != owner.pk:
        raise KnowledgeRefusal(_("That AI profile is not yours."))
    return qdrant_url


def _model_and_dimension(
    *, provider: str, model_name: str, ai_profile: AIProfile | None
) -> tuple[str, int | None]:
    """The model a new collection embeds with and its dimension (none for keyword-only)."""
    if provider == Store.Provider.FASTEMBED:
        # The name and dimension only: the model itself is loaded by the indexing worker.
        model_name = local_model_check(model_name)
        try:
            return model_name, local_dimension(model_name)
        except EmbeddingUnavailable as error:
            raise KnowledgeRefusal(str(error)) from error
    if provider == Store.Provider.NONE:
        return model_name, None
    release_db_connection()  # the probe below may wait on an outside server
    try:
        embedder = embedder_build(provider=provider, model_name=model_name, ai_profile=ai_profile)
    except EmbeddingUnavailable as error:
        raise KnowledgeRefusal(str(error)) from error
    return embedder.model_name, embedder.dimension


def _name_taken(name: str) -> KnowledgeRefusal:
    return KnowledgeRefusal(
        _("You already have a collection named %(name)s.") % {"name": repr(name)}
    )


def _store_insert(
    store: Store,
    *,
    name: str,
    provider: str,
    model_name: str,
    ai_profile: AIProfile | None,
    role_text: bool,
    role_coding: bool,
    autonomous_opt_in: bool,
    language: str,
) -> Store:
    try:
        with transaction.atomic(durable=True):
            store = Store.objects.create(
                owner=store.owner,
                backend=store.backend,
                qdrant_url=store.qdrant_url,
                qdrant_collection=store.qdrant_collection,
                qdrant_api_key_encrypted=store.qdrant_api_key_encrypted,
                name=name,
                provider=provider,
                model_name=model_name,
                dimension=store.dimension,
                ai_profile=ai_profile,
                role_text=role_text,
                role_coding=role_coding,
                autonomous_opt_in=autonomous_opt_in,
                language=language,
            )
    except IntegrityError as error:
        # The check before cannot see a parallel request's new collection of that name.
        if "unique_store_name_per_owner" in str(error):
            raise _name_taken(name) from None
        raise
    # No vector index yet: the first index job builds it after loading its chunks
    # (_ensure_vector_index), in the commit that makes them visible.
    return store


def _ensure_vector_index(store: Store) -> bool:
    """Build the store's HNSW index if it has none yet; True when it was built now.

    Called in the commit that inserts a job's chunks, after the insert: the first
    (bulk) load of a collection builds its graph once from all its rows instead of
    inserting them into the graph one by one, and stays atomic (PostgreSQL's DDL is
    transactional). Later jobs add their rows to the existing graph.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NULL", [store.index_name])
        row = cursor.fetchone()
    if not (row and row[0]):
        return False
    with connection.cursor() as cursor:
        # The insert's deferred foreign-key checks must run first: PostgreSQL builds no
        # index on a table with pending trigger events. They run now instead of at commit.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        _create_vector_index(store)
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
    return True


def _create_vector_index(store: Store) -> None:
    # One partial HNSW index per store, on the embedding cast to the store's dimension:
    # a query for one store only walks that store's graph.
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {store.index_name} ON knowledge_chunk "
            f"USING hnsw ((embedding::vector({int(store.dimension or 0)})) vector_cosine_ops) "
            f"WITH (m = {int(settings.KNOWLEDGE_HNSW_M)}, "
            f"ef_construction = {int(settings.KNOWLEDGE_HNSW_EF_CONSTRUCTION)}) "
            f"WHERE store_id = {int(store.pk)}"
        )


def store_delete(*, store: Store) -> None:
    """Delete a collection and its chunks; the original files are never touched. Our
    copies of uploaded files go after the commit (store_leftovers_forget)."""
    if store.in_qdrant:  # its vectors first: a failure leaves the collection whole
        qdrant.collection_delete(store)
    with transaction.atomic(durable=True):
        # An upload or a folder that locked the row first has its source committed before
        # the delete collects what to cascade; unlocked, that source slipped in between
        # and the delete failed at its commit (a 500, and the collection stayed).
        store_lock(store)
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS {store.index_name}")
        store.delete()


def store_rebuild(*, store: Store) -> Store:
    """Start over with the configured model: drop the old vectors; sources then re-index."""
    if store.provider == Store.Provider.NONE:
        raise KnowledgeRefusal(_("A keyword-only collection has no vectors to rebuild."))
    if store.in_qdrant:
        raise KnowledgeRefusal(
            "A collection in Qdrant cannot be rebuilt for a new model yet; create a new "
            "collection with that model and delete this one."
        )
    release_db_connection()
    try:
        if store.provider == Store.Provider.FASTEMBED:  # name and dimension, no model load
            # A packaged model stays the collection's; another one follows EMBEDDING_MODEL
            # (its folder, EMBEDDING_MODEL_PATH, is what changed).
            model_name = (
                store.model_name
                if store.model_name in PACKAGED_MODELS
                else settings.EMBEDDING_MODEL
            )
            dimension = local_dimension(model_name)
        else:
            embedder = embedder_build(
                provider=store.provider,
                model_name=store.ai_profile.model if store.ai_profile else "",
                ai_profile=store.ai_profile,
            )
            model_name, dimension = embedder.model_name, embedder.dimension
    except EmbeddingUnavailable as error:
        raise KnowledgeRefusal(str(error)) from error
    with transaction.atomic(durable=True):
        if Job.objects.filter(store=store, state__in=Job.PENDING_STATES).exists():
            raise JobBusy(_("A job is running for this collection; wait for it or cancel it."))
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS {store.index_name}")
        Document.objects.filter(source__store=store).delete()
        store.sources.update(
            hashes={},
            file_count=0,
            chunk_count=0,
            status=Source.Status.NEW,
            status_message="Rebuilt for a new model: run Update now to index it again.",
        )
        store.model_name, store.dimension = model_name, dimension
        store.save(update_fields=["model_name", "dimension"])
        # The next index job builds the new index after loading (_ensure_vector_index).
    return store


def _points_delete_on_commit(store: Store, chunk_ids: list[int]) -> None:
    if chunk_ids:
        transaction.on_commit(functools.partial(qdrant.points_delete, store, chunk_ids))
