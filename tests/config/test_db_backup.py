"""manage.py backup → restore onto a fresh database: every memory file and history row."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_agent_scope, ensure_user_scope
from tests import conftest
from tests.factories import AgentFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

TABLES = {
    "memory_addon_memoryfile": "id",
    "memory_addon_changeset": "id",
    "memory_addon_filechange": "id",
    "memory_addon_memoryscope": "id",
    "accounts_user": "id",
}


def _rows(url: str) -> dict[str, list[tuple[object, ...]]]:
    with psycopg.connect(url) as conn:
        return {
            table: conn.execute(f"SELECT * FROM {table} ORDER BY {key}").fetchall()  # noqa: S608
            for table, key in TABLES.items()
        }


@pytest.fixture
def fresh_database():
    name = f"restore_{uuid.uuid4().hex[:10]}"
    admin_url = conftest.suite_database_url()
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = admin_url.replace(f"/{connection.settings_dict['NAME']}?", f"/{name}?")
    yield url
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _some_memory() -> None:
    person = UserFactory()
    own = ensure_user_scope(person)
    file_write(
        user=person,
        scope=own,
        path="index.md",
        content="- home: Rome -> home.md\n",
        base_sha256=None,
    )
    file_write(user=person, scope=own, path="home.md", content="Lives in Rome.\n", base_sha256=None)
    file_write(
        user=person, scope=own, path="home.md", content="Lives in Turin now.\n", base_sha256=None
    )
    agent = AgentFactory(owner=person)
    file_write(
        user=person,
        scope=ensure_agent_scope(agent),
        path="index.md",
        content="Ünïcode ✓\n",
        base_sha256=None,
    )


def test_backup_then_restore_on_a_fresh_database_keeps_every_file_and_history_row(
    tmp_path, fresh_database
):
    _some_memory()
    before = _rows(conftest.suite_database_url())
    assert len(before["memory_addon_memoryfile"]) == 3
    assert len(before["memory_addon_filechange"]) >= 4  # history: every version is a row

    dump = tmp_path / "backups" / "one.dump"
    call_command("backup", output=str(dump))
    assert dump.stat().st_size > 0
    call_command("restore", str(dump), database_url=fresh_database)

    assert _rows(fresh_database) == before
    with psycopg.connect(fresh_database) as conn:
        # The vector extension and the migrations came along: the app can start on it.
        assert conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
        assert conn.execute("SELECT count(*) FROM django_migrations").fetchone()[0] > 10


def test_restore_refuses_a_database_that_holds_tables(tmp_path):
    dump = tmp_path / "one.dump"
    call_command("backup", output=str(dump))
    with pytest.raises(CommandError, match="already holds tables"):
        call_command("restore", str(dump))


def test_dated_backups_keep_only_the_newest(tmp_path):
    folder = tmp_path / "backups"
    for _ in range(3):
        call_command("backup", folder=str(folder), keep=2)
    assert len(list(folder.glob("memory-*.dump"))) == 2
    assert not list(folder.glob("*.partial"))
