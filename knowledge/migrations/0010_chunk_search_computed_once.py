"""A chunk's search vector is computed once per row, by the insert trigger.

Both generated columns ran `to_tsvector` on the text (PostgreSQL cannot build one
generated column from another): on keyword-only collections that was most of the cost
of writing a chunk. `DROP EXPRESSION` keeps every row's values and the GIN index; the
language trigger now also sets the vector and its length, on insert and when the text
or language of a row changes.
"""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models

FORWARD = """
ALTER TABLE knowledge_chunk ALTER COLUMN search DROP EXPRESSION;
ALTER TABLE knowledge_chunk ALTER COLUMN search_length DROP EXPRESSION;

CREATE FUNCTION knowledge_chunk_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT language INTO NEW.language FROM knowledge_store WHERE id = NEW.store_id;
        NEW.language := coalesce(NEW.language, 'english');
    ELSIF NEW.text IS NOT DISTINCT FROM OLD.text
          AND NEW.language IS NOT DISTINCT FROM OLD.language THEN
        -- Derived columns follow the text alone.
        NEW.search := OLD.search;
        NEW.search_length := OLD.search_length;
        RETURN NEW;
    END IF;
    NEW.search := to_tsvector(
        (CASE WHEN NEW.language = 'german' THEN 'german' ELSE 'english' END)::regconfig,
        coalesce(NEW.text, '')
    );
    NEW.search_length := knowledge_tsvector_length(NEW.search);
    RETURN NEW;
END $$;

DROP TRIGGER knowledge_chunk_language ON knowledge_chunk;
DROP FUNCTION knowledge_chunk_language();
CREATE TRIGGER knowledge_chunk_search BEFORE INSERT OR UPDATE ON knowledge_chunk
    FOR EACH ROW EXECUTE FUNCTION knowledge_chunk_search();
"""

SEARCH = (
    "CASE WHEN language = 'german' THEN to_tsvector('german'::regconfig, COALESCE(text, ''))"
    " ELSE to_tsvector('english'::regconfig, COALESCE(text, '')) END"
)

BACKWARD = f"""
DROP TRIGGER knowledge_chunk_search ON knowledge_chunk;
DROP FUNCTION knowledge_chunk_search();
CREATE FUNCTION knowledge_chunk_language() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT language INTO NEW.language FROM knowledge_store WHERE id = NEW.store_id;
    NEW.language := coalesce(NEW.language, 'english');
    RETURN NEW;
END $$;
CREATE TRIGGER knowledge_chunk_language BEFORE INSERT ON knowledge_chunk
    FOR EACH ROW EXECUTE FUNCTION knowledge_chunk_language();

ALTER TABLE knowledge_chunk DROP COLUMN search, DROP COLUMN search_length;
ALTER TABLE knowledge_chunk
    ADD COLUMN search tsvector GENERATED ALWAYS AS ({SEARCH}) STORED,
    ADD COLUMN search_length integer
        GENERATED ALWAYS AS (knowledge_tsvector_length({SEARCH})) STORED;
CREATE INDEX chunk_search_gin ON knowledge_chunk USING gin (search);
"""  # noqa: S608 (the constant above, no input)


class Migration(migrations.Migration):
    dependencies = [
        ("knowledge", "0009_job_waits_in_line"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, BACKWARD)],
            state_operations=[
                migrations.RemoveIndex(model_name="chunk", name="chunk_search_gin"),
                migrations.RemoveField(model_name="chunk", name="search"),
                migrations.RemoveField(model_name="chunk", name="search_length"),
                migrations.AddField(
                    model_name="chunk",
                    name="search",
                    field=django.contrib.postgres.search.SearchVectorField(
                        editable=False, null=True
                    ),
                ),
                migrations.AddField(
                    model_name="chunk",
                    name="search_length",
                    field=models.IntegerField(editable=False, null=True),
                ),
                migrations.AddIndex(
                    model_name="chunk",
                    index=django.contrib.postgres.indexes.GinIndex(
                        fields=["search"], name="chunk_search_gin"
                    ),
                ),
            ],
        ),
    ]
