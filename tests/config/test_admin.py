from __future__ import annotations

import pytest
from django.contrib import admin

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_every_admin_list_page_renders(client):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    for model in admin.site._registry:
        url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        assert client.get(url).status_code == 200, url
