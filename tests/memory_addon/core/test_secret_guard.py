from __future__ import annotations

import pytest

from memory_addon.core.secret_guard import find_secret, mask_outbound


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("key: AKIAIOSFODNN7EXAMPLE", "known token format"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", "known token format"),
        ("use ghp_abcdefghijklmnopqrstuvwxyz0123456789", "known token format"),
        ("db_password=hunter22", "password assignment"),
        ('API_KEY: "s3cr3t-value"', "password assignment"),
        ("the password is swordfish", "password in prose"),
        ("Das Passwort ist Geheim123", "password in prose"),
        ("aZ3k9Qx7Lm2Pq8Rt5Vw1Yb4Nc6Hd0Jf2Gs", "random-looking string"),
    ],
)
def test_each_kind_is_found_with_its_line(text, kind):
    finding = find_secret(f"first line\n{text}\nlast line")
    assert finding is not None
    assert (finding.line, finding.kind) == (2, kind)
    assert text.split()[-1] not in finding.message()


@pytest.mark.parametrize(
    "text",
    [
        "lives in Rome -> home.md",
        "password: ${DB_PASSWORD}",
        "token: <your token>",
        "The password policy is strict",
        "see https://github.com/snap-research/locomo/blob/main/README.md",
        "deployment my-very-long-identifier-name-for-a-kubernetes-deployment-2024",
    ],
)
def test_ordinary_text_is_not_a_secret(text):
    assert find_secret(text) is None


def test_fence_hashes_are_not_flagged():
    fence = (
        "<!-- memory:entry id=ab origin=assistant sha256="
        + "a1" * 32
        + " created=2026-01-01 source=chat -->"
    )
    assert find_secret(fence) is None


def test_outbound_masking_hides_password_values_in_prose():
    masked = mask_outbound("Note: the password is swordfish, and db_password=hunter22")
    assert "swordfish" not in masked and "hunter22" not in masked
    assert "the password is [masked]," in masked
