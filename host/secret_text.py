"""The secret guard's findings in the person's language (the guard itself has no Django)."""

from __future__ import annotations

from django.utils.functional import Promise
from django.utils.translation import gettext, gettext_lazy

from host.core.secret_guard import SecretFinding

KIND_LABELS: dict[str, Promise] = {
    "known token format": gettext_lazy("a token in a known format (private key or provider token)"),
    "password assignment": gettext_lazy("a password or token assigned a literal value"),
    "password in prose": gettext_lazy("a password named in prose"),
    "random-looking string": gettext_lazy("a long random-looking string"),
    "stored secret": gettext_lazy(
        "a secret this host keeps for you (an AI profile's API key, a webhook or bridge secret)"
    ),
}


def kind_label(kind: str) -> str:
    return str(KIND_LABELS.get(kind, kind))


def secret_refusal(finding: SecretFinding) -> str:
    """What the person (or the model) is told when a line looks like a secret."""
    return gettext(
        "Line %(line)s looks like it holds a secret (%(kind)s). Remove that line and try again."
    ) % {"line": finding.line, "kind": kind_label(finding.kind)}
