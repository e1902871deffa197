"""A chunk's search vector and its length are computed once per row by the insert
trigger (migration 0010), on every write path, and follow the text alone."""

from __future__ import annotations

import pytest
from django.db import connection

from knowledge import services
from knowledge.models import Chunk, Document, Source

pytestmark = pytest.mark.django_db


def _chunk(user, text: str, language: str = "english") -> Chunk:
    store = services.store_create(
        owner=user, name=f"kw-{language}", provider="none", language=language
    )
    source = Source.objects.create(store=store, kind=Source.Kind.FOLDER, path=f"/d/{language}")
    document = Document.objects.create(
        source=source, path="a.txt", sha256="x", format="text", size=1
    )
    return Chunk.objects.create(
        document=document, store=store, source=source, ordinal=0, text=text, token_count=1
    )


def _expected(text: str, config: str) -> tuple[str, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT to_tsvector(%s::regconfig, %s)::text,"
            " knowledge_tsvector_length(to_tsvector(%s::regconfig, %s))",
            [config, text, config, text],
        )
        vector, length = cursor.fetchone()
    return vector, length


def _stored(chunk: Chunk) -> tuple[str, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT search::text, search_length FROM knowledge_chunk WHERE id = %s", [chunk.pk]
        )
        vector, length = cursor.fetchone()
    return vector, length


def test_the_chunk_table_has_no_generated_column_to_compute_the_vector_twice():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_name = 'knowledge_chunk' AND is_generated = 'ALWAYS'"
        )
        assert cursor.fetchall() == []


@pytest.mark.parametrize("language", ["english", "german"])
def test_an_inserted_chunk_gets_the_vector_and_length_of_its_collections_language(user, language):
    text = "The gardeners were planting roses; die Gärtner pflanzten Rosen."
    chunk = _chunk(user, text, language)
    assert _stored(chunk) == _expected(text, language)
    assert _stored(chunk)[1] > 0


def test_a_write_to_the_derived_columns_is_ignored_and_a_new_text_recomputes_them(user):
    chunk = _chunk(user, "Alpacas hum at dawn.")
    before = _stored(chunk)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE knowledge_chunk SET search = to_tsvector('simple', 'forged'),"
            " search_length = 999 WHERE id = %s",
            [chunk.pk],
        )
    assert _stored(chunk) == before
    chunk.save()  # the ORM writes the columns it loaded (none here): nothing changes
    assert _stored(chunk) == before
    Chunk.objects.filter(pk=chunk.pk).update(text="Llamas spit at noon.")
    assert _stored(chunk) == _expected("Llamas spit at noon.", "english")
