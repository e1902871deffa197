"""compose.yaml as `docker compose config` would read it, with 1 and 3 replicas.

Docker is not available to the test suite, so this interpolates the variables the
way Compose does (${X}, ${X:-default}, ${X:?error}, $$) and checks the structure;
it does not validate against the compose-spec JSON schema (no PyPI package ships it).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from django.conf import settings

from tests.conftest import ROOT

_VARIABLE = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}")
ENV = {"POSTGRES_PASSWORD": "secret", "HTTP_PORT": "8080"}


def _interpolate(value: Any, env: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {key: _interpolate(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [_interpolate(item, env) for item in value]
    if not isinstance(value, str):
        return value

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, operator, argument = match.groups()
        current = env.get(name)
        if operator in (":-", "-"):
            return current if current else (argument or "")
        if operator in (":?", "?") and not current:
            raise ValueError(f"{name}: {argument}")
        return current or ""

    return _VARIABLE.sub(replace, value)


def _config(**env: str) -> dict[str, Any]:
    loaded = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return _interpolate(loaded, {**ENV, **env})


@pytest.mark.parametrize("replicas", ["1", "3"])
def test_web_and_workers_scale_to_any_number_of_replicas(replicas):
    services = _config(
        WEB_REPLICAS=replicas, WORKER_REPLICAS=replicas, CHAT_WORKER_REPLICAS=replicas
    )["services"]
    for name in ("web", "worker", "chat-worker"):
        assert int(services[name]["deploy"]["replicas"]) == int(replicas)
    # Replicas can only start side by side when none of them binds a host port.
    assert "ports" not in services["web"]
    assert services["proxy"]["ports"] == ["8080:80"]


def test_the_default_is_one_replica_each():
    services = _config()["services"]
    assert {services[n]["deploy"]["replicas"] for n in ("web", "worker", "chat-worker")} == {"1"}


def test_a_missing_database_password_stops_the_config():
    with pytest.raises(ValueError, match="POSTGRES_PASSWORD"):
        _config(POSTGRES_PASSWORD="")


def test_every_long_running_service_has_a_health_check():
    services = _config()["services"]
    for name, service in services.items():
        if service.get("restart") == "no":
            continue  # the one-shot migrate job: the others wait for it to complete
        test = service.get("healthcheck", {}).get("test")
        assert test and test[0] in ("CMD", "CMD-SHELL"), name


def test_the_chat_queue_and_the_indexing_queue_have_their_own_workers():
    services = _config()["services"]
    assert "-Q celery" in " ".join(services["worker"]["command"])
    assert "-Q ${CHAT_QUEUE:-chat} --pool threads" in services["chat-worker"]["command"][2]
    delivery = services["delivery-worker"]["command"][2]
    assert "-Q ${DELIVERY_QUEUE:-deliveries} --pool threads" in delivery


def test_the_app_trusts_the_proxy_and_the_proxy_serves_static_files():
    services = _config()["services"]
    environment = services["web"]["environment"]
    assert environment["BEHIND_TLS_PROXY"] == "true"
    assert environment["USE_X_FORWARDED_HOST"] == "true"
    assert "static:/static:ro" in services["proxy"]["volumes"]
    assert "collectstatic" in services["migrate"]["command"][-1]
    assert services["proxy"]["image"].startswith("nginx:")


def test_forwarded_addresses_are_believed_from_the_proxys_network_only():
    config = _config()
    services = config["services"]
    (subnet,) = [block["subnet"] for block in config["networks"]["edge"]["ipam"]["config"]]
    assert services["proxy"]["networks"] == ["edge"]
    assert "edge" in services["web"]["networks"]
    assert services["web"]["environment"]["TRUSTED_PROXIES"].split(",")[0] == subnet
    assert "--proxy-headers" not in services["web"]["command"]
    # The app's access line names the client; uvicorn's would name the proxy.
    assert "--no-access-log" in services["web"]["command"]
    assert services["web"]["environment"]["LOG_REQUESTS"] == "true"
    outer = _config(OUTER_PROXIES="192.0.2.0/28")["services"]["web"]["environment"]
    assert outer["TRUSTED_PROXIES"] == f"{subnet},192.0.2.0/28"


def test_the_proxy_passes_websockets_and_forwarded_headers():
    conf = (ROOT / "deploy" / "nginx.conf").read_text()
    directives = {
        " ".join(line.split()).rstrip(";")
        for line in conf.splitlines()
        if line.strip() and not line.strip().startswith("#")
    }
    for expected in (
        "proxy_http_version 1.1",
        "proxy_set_header Upgrade $http_upgrade",
        "proxy_set_header Connection $connection_upgrade",
        # With the port: a proxy on another port than 80 keeps Origin and Host alike
        # (CSRF, the websocket's origin check); tests/chaos/test_scale_out.py runs it so.
        "proxy_set_header Host $http_host",
        "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for",
        "proxy_set_header X-Forwarded-Proto $scheme",
        "proxy_set_header X-Forwarded-Host $http_host",
        "proxy_set_header X-Request-ID $memory_request_id",
        "server web:8000 max_fails=3 fail_timeout=10s",
        "alias /static/",
    ):
        assert expected in directives, expected
    assert re.search(r"map \$http_upgrade \$connection_upgrade \{\s*default upgrade;", conf)


def test_the_proxy_bounds_bodies_headers_and_idle_connections_like_the_app():
    conf = (ROOT / "deploy" / "nginx.conf").read_text()
    directives = dict(
        line.strip().rstrip(";").split(None, 1)
        for line in conf.splitlines()
        if line.strip() and not line.strip().startswith(("#", "}")) and "{" not in line
    )
    assert int(directives["client_max_body_size"].rstrip("m")) * 1024 * 1024 == (
        settings.REQUEST_MAX_UPLOAD_BYTES
    )
    assert float(directives["client_header_timeout"].rstrip("s")) == (
        settings.REQUEST_HEADER_TIMEOUT_SECONDS
    )
    assert float(directives["client_body_timeout"].rstrip("s")) <= (
        settings.REQUEST_BODY_GRACE_SECONDS
    )
    assert directives["keepalive_timeout"] == "5s"


def test_backups_are_scheduled_with_retention_and_s3_is_an_optional_profile():
    services = _config(BACKUP_KEEP_DAYS="7")["services"]
    backup = services["backup"]
    assert backup["environment"]["BACKUP_KEEP_DAYS"] == "7"
    script = backup["command"][0]
    assert "pg_dump --format custom" in script and "-mtime +$BACKUP_KEEP_DAYS -delete" in script
    assert services["minio"]["profiles"] == ["s3"]
    assert services["qdrant"]["profiles"] == ["qdrant"]
    assert services["qdrant"]["image"].startswith("qdrant/qdrant:")
    assert "profiles" not in services["web"]
