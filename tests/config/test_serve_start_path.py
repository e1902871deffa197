"""What `manage.py serve` does before its children start, and what it moved after."""

from __future__ import annotations

import io

import pytest
from django.core import checks
from django.db import connection

from config.management.commands.serve import Command, migrations_all_recorded


@pytest.mark.django_db
def test_a_database_with_every_migration_recorded_needs_no_migrate():
    assert migrations_all_recorded()


@pytest.mark.django_db
def test_one_migration_not_recorded_makes_serve_run_migrate():
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM django_migrations WHERE id = "
            "(SELECT max(id) FROM django_migrations WHERE app = 'knowledge')"
        )
    assert not migrations_all_recorded()


@pytest.mark.django_db
def test_a_new_migration_file_makes_serve_run_migrate(settings, tmp_path, monkeypatch):
    package = tmp_path / "newer_migrations"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "0001_initial.py").write_text("")
    (package / "9999_not_applied_yet.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    settings.MIGRATION_MODULES = {"learning": "newer_migrations"}
    assert not migrations_all_recorded()


@pytest.mark.django_db
def test_no_migrations_table_makes_serve_run_migrate(monkeypatch):
    monkeypatch.setattr(
        "django.db.migrations.recorder.MigrationRecorder.has_table", lambda self: False
    )
    assert not migrations_all_recorded()


@pytest.fixture
def failing_check():
    def broken_setting(app_configs, **kwargs):
        return [checks.Error("A setting is broken.", hint="Fix it.", id="tests.E001")]

    checks.register(broken_setting)
    yield
    checks.registry.registry.registered_checks.discard(broken_setting)


def test_a_system_check_error_found_after_the_start_ends_the_run(failing_check):
    err = io.StringIO()
    command = Command(stdout=io.StringIO(), stderr=err)
    assert command._check_project() is False
    assert "A setting is broken." in err.getvalue()
    assert "Stopping: the system checks found errors." in err.getvalue()


def test_without_check_errors_the_run_goes_on():
    assert Command(stdout=io.StringIO(), stderr=io.StringIO())._check_project() is True
