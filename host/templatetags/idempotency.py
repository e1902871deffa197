"""`{% idempotency_field %}`: a fresh key in a page form, so sending it again is one write."""

from __future__ import annotations

from uuid import uuid4

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

from host.idempotency import FORM_FIELD

register = template.Library()


@register.simple_tag
def idempotency_field() -> SafeString:
    return format_html('<input type="hidden" name="{}" value="{}">', FORM_FIELD, uuid4().hex)
