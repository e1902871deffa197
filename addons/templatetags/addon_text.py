"""An add-on's own words (its name, settings, skills) in the page's language where the
site's catalogue has them, as the built-in Short memory add-on's are; an outside author's
text shows as written."""

from __future__ import annotations

from django import template
from django.utils.translation import gettext

register = template.Library()


@register.filter
def addon_text(value: object) -> object:
    # gettext("") would give the catalogue's header.
    return gettext(value) if isinstance(value, str) and value else value
