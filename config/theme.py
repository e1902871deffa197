"""The colour theme a person chose (system, light or dark), kept in a cookie so that
signed-out pages and the first paint follow it too."""

from __future__ import annotations

from typing import Literal

from django.http import HttpRequest

Theme = Literal["system", "light", "dark"]
THEMES: tuple[Theme, ...] = ("system", "light", "dark")
THEME_COOKIE = "theme"
THEME_COOKIE_AGE = 365 * 24 * 3600


def theme_of(request: HttpRequest) -> Theme:
    value = request.COOKIES.get(THEME_COOKIE, "")
    for theme in THEMES:
        if value == theme:
            return theme
    return "system"
