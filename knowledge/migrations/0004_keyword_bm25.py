"""BM25 keyword ranking: per-store text search language, chunk lengths, term statistics.

The statistics are kept by statement-level triggers on knowledge_chunk, so every
insert or delete (the index commit, a removed source, a rebuild, COPY in the
benchmarks) updates them in its own transaction: a new index version and its
statistics become visible together.
"""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
import django.db.models.deletion
from django.db import migrations, models

TSVECTOR_LENGTH = """
CREATE OR REPLACE FUNCTION knowledge_tsvector_length(v tsvector) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0)::integer FROM unnest(v)
$$;
"""

TRIGGERS = """
CREATE FUNCTION knowledge_chunk_language() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT language INTO NEW.language FROM knowledge_store WHERE id = NEW.store_id;
    NEW.language := coalesce(NEW.language, 'english');
    RETURN NEW;
END $$;

CREATE TRIGGER knowledge_chunk_language BEFORE INSERT ON knowledge_chunk
    FOR EACH ROW EXECUTE FUNCTION knowledge_chunk_language();

CREATE FUNCTION knowledge_chunk_stats_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- The store's totals row first: concurrent writers of one store queue on it, so
    -- their term upserts never deadlock.
    INSERT INTO knowledge_keywordstats AS s (store_id, chunks, tokens)
    SELECT store_id, count(*), coalesce(sum(search_length), 0) FROM new_rows
    GROUP BY store_id ORDER BY store_id
    ON CONFLICT (store_id) DO UPDATE
        SET chunks = s.chunks + EXCLUDED.chunks, tokens = s.tokens + EXCLUDED.tokens;
    INSERT INTO knowledge_keywordterm AS t (store_id, term, df)
    SELECT n.store_id, u.lexeme, count(*) FROM new_rows n, unnest(n.search) u
    GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (store_id, term) DO UPDATE SET df = t.df + EXCLUDED.df;
    RETURN NULL;
END $$;

CREATE FUNCTION knowledge_chunk_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Only updates: when a whole store is deleted its rows may already be gone.
    UPDATE knowledge_keywordstats s
    SET chunks = s.chunks - d.chunks, tokens = s.tokens - d.tokens
    FROM (SELECT store_id, count(*) AS chunks, coalesce(sum(search_length), 0) AS tokens
          FROM old_rows GROUP BY store_id) d
    WHERE s.store_id = d.store_id;
    UPDATE knowledge_keywordterm t SET df = t.df - d.df
    FROM (SELECT o.store_id, u.lexeme, count(*) AS df FROM old_rows o, unnest(o.search) u
          GROUP BY 1, 2) d
    WHERE t.store_id = d.store_id AND t.term = d.lexeme;
    DELETE FROM knowledge_keywordterm t
    WHERE t.df <= 0 AND t.store_id IN (SELECT DISTINCT store_id FROM old_rows);
    RETURN NULL;
END $$;

CREATE TRIGGER knowledge_chunk_stats_insert AFTER INSERT ON knowledge_chunk
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION knowledge_chunk_stats_insert();
CREATE TRIGGER knowledge_chunk_stats_delete AFTER DELETE ON knowledge_chunk
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION knowledge_chunk_stats_delete();
"""

DROP_TRIGGERS = """
DROP TRIGGER IF EXISTS knowledge_chunk_stats_insert ON knowledge_chunk;
DROP TRIGGER IF EXISTS knowledge_chunk_stats_delete ON knowledge_chunk;
DROP TRIGGER IF EXISTS knowledge_chunk_language ON knowledge_chunk;
DROP FUNCTION IF EXISTS knowledge_chunk_stats_insert();
DROP FUNCTION IF EXISTS knowledge_chunk_stats_delete();
DROP FUNCTION IF EXISTS knowledge_chunk_language();
"""

BACKFILL = """
INSERT INTO knowledge_keywordstats (store_id, chunks, tokens)
SELECT store_id, count(*), coalesce(sum(search_length), 0) FROM knowledge_chunk GROUP BY store_id;
INSERT INTO knowledge_keywordterm (store_id, term, df)
SELECT c.store_id, u.lexeme, count(*) FROM knowledge_chunk c, unnest(c.search) u GROUP BY 1, 2;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0003_job_requeues"),
    ]

    operations = [
        migrations.RunSQL(
            TSVECTOR_LENGTH, "DROP FUNCTION IF EXISTS knowledge_tsvector_length(tsvector)"
        ),
        migrations.CreateModel(
            name="KeywordStats",
            fields=[
                (
                    "store",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="keyword_stats",
                        serialize=False,
                        to="knowledge.store",
                    ),
                ),
                ("chunks", models.BigIntegerField(default=0)),
                ("tokens", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.AddField(
            model_name="chunk",
            name="language",
            field=models.CharField(db_default="english", editable=False, max_length=16),
        ),
        migrations.AddField(
            model_name="store",
            name="language",
            field=models.CharField(
                choices=[("english", "English"), ("german", "German")],
                default="english",
                help_text="Stemming and stop words of keyword search; fixed when the collection is made.",
                max_length=16,
            ),
        ),
        migrations.RemoveIndex(model_name="chunk", name="chunk_search_gin"),
        migrations.RemoveField(model_name="chunk", name="search"),
        migrations.AddField(
            model_name="chunk",
            name="search",
            field=models.GeneratedField(
                db_persist=True,
                expression=models.Case(
                    models.When(
                        language="german",
                        then=django.contrib.postgres.search.SearchVector("text", config="german"),
                    ),
                    default=django.contrib.postgres.search.SearchVector("text", config="english"),
                ),
                output_field=django.contrib.postgres.search.SearchVectorField(),
            ),
        ),
        migrations.AddIndex(
            model_name="chunk",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["search"], name="chunk_search_gin"
            ),
        ),
        migrations.AddField(
            model_name="chunk",
            name="search_length",
            field=models.GeneratedField(
                db_persist=True,
                expression=models.Func(
                    models.Case(
                        models.When(
                            language="german",
                            then=django.contrib.postgres.search.SearchVector(
                                "text", config="german"
                            ),
                        ),
                        default=django.contrib.postgres.search.SearchVector(
                            "text", config="english"
                        ),
                    ),
                    function="knowledge_tsvector_length",
                    output_field=models.IntegerField(),
                ),
                output_field=models.IntegerField(),
            ),
        ),
        migrations.CreateModel(
            name="KeywordTerm",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("term", models.TextField()),
                ("df", models.BigIntegerField()),
                (
                    "store",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="knowledge.store",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("store", "term"), name="unique_keyword_term")
                ],
            },
        ),
        migrations.RunSQL(TRIGGERS, DROP_TRIGGERS),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
    ]
