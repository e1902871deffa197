"""Production configuration: `check --deploy` and the compose file."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from tests.conftest import ROOT, child_env

pytestmark = pytest.mark.django_db


def _check_deploy(**extra_env: str) -> subprocess.CompletedProcess[str]:
    env = child_env(
        DJANGO_SETTINGS_MODULE="config.settings",
        SECRET_KEY="x" * 20 + os.urandom(24).hex(),
        ALLOWED_HOSTS="memory.example.org",
        DEBUG="false",
        **extra_env,
    )
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_check_deploy_is_clean_under_a_production_environment():
    result = _check_deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_check_deploy_reports_hsts_though_our_security_middleware_extends_djangos():
    result = _check_deploy(SECURE_HSTS_SECONDS="0")
    assert result.returncode != 0
    assert "security.W004" in result.stdout + result.stderr


def test_compose_file_runs_every_process_against_shared_postgres_and_redis():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = compose["services"]
    assert {"db", "redis", "migrate", "web", "worker", "beat"} <= set(services)
    assert services["db"]["image"].startswith("pgvector/pgvector:")
    for name in ("migrate", "web", "worker", "beat"):
        environment = services[name]["environment"]
        assert environment["DATABASE_URL"].startswith("postgres://")
        assert environment["REDIS_URL"].startswith("redis://redis:")
    for name in ("web", "worker", "beat"):
        assert services[name]["depends_on"]["migrate"]["condition"] == (
            "service_completed_successfully"
        )
    assert "replicas" in services["web"]["deploy"]
