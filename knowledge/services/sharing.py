"""Sharing a collection with the sharer's organization and with named people in it."""

from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext

from accounts.models import Organization, User
from knowledge.errors import KnowledgeRefusal
from knowledge.models import Store, StoreShare
from knowledge.services.stores import store_lock


class ShareRefused(KnowledgeRefusal):
    """An organization or person the sharer may not name; `field` says which input."""


def _unknown(field: str, ids: list[int]) -> ShareRefused:
    listed = ", ".join(str(i) for i in ids)
    return ShareRefused(
        gettext("%(field)s: no such person in your organization: %(ids)s.")
        % {"field": field, "ids": listed},
        field=field,
    )


def store_share_set(
    *,
    store: Store,
    actor: User,
    organization_id: int | None,
    readers: list[int],
    managers: list[int],
) -> None:
    """Replace who the collection is shared with.

    Only the actor's own organization and its members can be named (an unknown and a
    foreign id read the same, so ids of other organizations are not probed). The owner
    needs no share and cannot be named.
    """
    own = Organization.objects.filter(membership__user=actor).first()
    if organization_id is not None and (own is None or own.pk != organization_id):
        raise ShareRefused(
            gettext("organization_id: you can only share with your own organization."),
            field="organization_id",
        )
    both = sorted(set(readers) & set(managers))
    if both:
        raise ShareRefused(
            gettext("managers: a person is either a reader or a manager, not both: %(ids)s.")
            % {"ids": ", ".join(str(i) for i in both)},
            field="managers",
        )
    members = (
        set(User.objects.filter(membership__organization=own).values_list("pk", flat=True))
        if own is not None
        else set()
    )
    members.discard(store.owner_id)
    for field, ids in (("readers", readers), ("managers", managers)):
        unknown = sorted(set(ids) - members)
        if unknown:
            raise _unknown(field, unknown)
    with transaction.atomic(durable=True):
        store_lock(store)
        store.shares.all().delete()
        rows = [
            StoreShare(store=store, user_id=pk, access=StoreShare.Access.READ)
            for pk in sorted(set(readers))
        ] + [
            StoreShare(store=store, user_id=pk, access=StoreShare.Access.MANAGE)
            for pk in sorted(set(managers))
        ]
        if organization_id is not None:
            rows.append(StoreShare(store=store, organization_id=organization_id))
        StoreShare.objects.bulk_create(rows)
