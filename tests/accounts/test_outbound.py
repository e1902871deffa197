"""AI-profile addresses cannot be used to probe the server's network (H2)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from accounts.models import AIProfile
from host.embeddings import EmbeddingUnavailable, OpenAIEmbedder
from host.outbound import OutboundRefused, check_outbound_url

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.5/v1",
        "http://192.168.1.20:11434/v1",
        "http://169.254.169.254/latest/meta-data",
        "http://[fd00::1]/v1",
        "http://0.0.0.0:8080/v1",
        "ftp://127.0.0.1/v1",
        "http://100.100.100.200/latest/meta-data/",  # shared address space (a cloud's metadata)
        "http://100.64.0.1/v1",
    ],
)
def test_internal_addresses_are_refused_by_default(url):
    with pytest.raises(OutboundRefused):
        check_outbound_url(url)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/v1", "http://localhost:11434/v1"])
def test_loopback_is_allowed_by_default_for_local_models(url):
    check_outbound_url(url)


def test_an_admin_can_allow_private_ranges_or_name_hosts(settings):
    settings.OUTBOUND_ALLOW_PRIVATE = True
    check_outbound_url("http://10.0.0.5/v1")
    settings.OUTBOUND_ALLOW_PRIVATE = False
    settings.OUTBOUND_ALLOWED_HOSTS = ["10.0.0.5"]
    check_outbound_url("http://10.0.0.5/v1")
    with pytest.raises(OutboundRefused, match="OUTBOUND_ALLOWED_HOSTS"):
        check_outbound_url("http://127.0.0.1/v1")


def test_an_admin_can_deny_hosts_and_loopback(settings):
    settings.OUTBOUND_DENIED_HOSTS = ["localhost"]
    with pytest.raises(OutboundRefused, match="blocked"):
        check_outbound_url("http://localhost:8080/v1")
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    with pytest.raises(OutboundRefused, match="loopback"):
        check_outbound_url("http://127.0.0.1:8080/v1")


def test_a_profile_with_an_internal_address_is_a_form_error(user):
    profile = AIProfile(owner=user, name="x", base_url="http://169.254.169.254/v1", model="m")
    with pytest.raises(ValidationError) as error:
        profile.full_clean()
    assert "base_url" in error.value.message_dict


def test_an_outside_servers_error_body_is_never_echoed(fake_openai):
    fake_openai.failures = [400]
    with pytest.raises(EmbeddingUnavailable) as error:
        OpenAIEmbedder(base_url=fake_openai.base_url, model_name="m", dimension=None)
    assert "HTTP 400" in str(error.value)
    assert "scripted" not in str(error.value)


def test_calls_to_internal_addresses_are_refused_at_call_time_too():
    embedder = OpenAIEmbedder.__new__(OpenAIEmbedder)
    embedder.base_url, embedder.model_name, embedder.api_key = "http://10.1.2.3/v1", "m", ""
    embedder.timeout, embedder.attempts = 1.0, 1
    with pytest.raises(EmbeddingUnavailable, match="private"):
        embedder.embed(["x"])


def test_a_profile_for_a_name_that_does_not_resolve_yet_can_be_saved(user):
    profile = AIProfile(owner=user, name="x", base_url="https://models.invalid/v1", model="m")
    profile.full_clean()
    with pytest.raises(OutboundRefused, match="cannot resolve"):
        check_outbound_url(profile.base_url)
