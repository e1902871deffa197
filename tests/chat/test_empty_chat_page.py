"""Issue 29: the chat page without an AI profile points to adding one, and an admin also
to the small demo model the host can start."""

from __future__ import annotations

import pytest

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("staff", "shown"), [(True, True), (False, False)])
def test_the_empty_chat_page_points_to_a_profile_and_admins_to_the_demo_model(client, staff, shown):
    client.force_login(UserFactory(is_staff=staff))
    page = client.get("/chat/").content.decode()
    assert 'id="no-profile"' in page and "/accounts/settings/" in page
    assert ("make demo-model" in page) is shown
