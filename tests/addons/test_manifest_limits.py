"""A manifest too deep or with a number too long to parse is refused as invalid JSON."""

from __future__ import annotations

import pytest

from addons.core.manifest import ManifestError, manifest_parse

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("raw", ["[" * 20_000 + "]" * 20_000, '{"api": ' + "9" * 5000 + "}"])
def test_a_manifest_nested_too_deep_or_with_a_huge_number_is_refused(raw):
    with pytest.raises(ManifestError, match="not valid JSON"):
        manifest_parse(raw)
