"""The request type of the htmx pages: django-htmx's middleware sets `request.htmx`, the one
way every view tells an htmx request from a full page load (django-htmx's example app)."""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails
