"""A shared collection's excerpts reach its readers' chat turns, scheduled runs and MCP
search, and never a stranger's; a role-assigned collection joins the turns of that role."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import AIProfile, Membership
from accounts.services import api_token_create
from chat.models import Message, Schedule
from chat.runner import turn_run
from chat.schedules import schedule_create, schedules_due
from chat.services import ChatRefused, conversation_create, message_send
from knowledge import services
from tests.config.test_mcp import mcp
from tests.factories import AIProfileFactory, OrganizationFactory, UserFactory
from tests.knowledge.test_sharing import add_excerpt, join

pytestmark = pytest.mark.django_db

EXCERPT = "Team llamas graze on the upper meadow."


@pytest.fixture
def team():
    organization = OrganizationFactory()
    owner, member = join(organization), join(organization)
    store = services.store_create(
        owner=owner, name="Team handbook", provider="none", role_text=False
    )
    add_excerpt(store, "llamas.md", EXCERPT)
    services.store_share_set(
        store=store, actor=owner, organization_id=organization.pk, readers=[], managers=[]
    )
    return owner, member, store


def _profile(person, fake_openai, role=AIProfile.Role.TEXT):
    return AIProfileFactory(
        owner=person, base_url=fake_openai.base_url, model="fake-model", role=role
    )


def _answer(fake_openai, person, conversation) -> str:
    """Run one turn and return the system prompt the model got."""
    answer = message_send(user=person, conversation=conversation, text="Where do llamas graze?")
    turn_run(message_id=answer.pk)
    answer.refresh_from_db()
    assert answer.state == Message.State.COMPLETE, answer.error
    return fake_openai.prompt()


def test_a_member_picks_a_shared_collection_and_its_excerpt_reaches_the_turn(fake_openai, team):
    _owner, member, store = team
    profile = _profile(member, fake_openai)
    conversation = conversation_create(user=member, profile_id=profile.pk, store_ids=[store.pk])
    assert EXCERPT in _answer(fake_openai, member, conversation)


def test_a_stranger_cannot_pick_a_shared_collection_and_never_gets_its_excerpt(fake_openai, team):
    _owner, _member, store = team
    stranger = UserFactory()
    profile = _profile(stranger, fake_openai)
    with pytest.raises(ChatRefused):
        conversation_create(user=stranger, profile_id=profile.pk, store_ids=[store.pk])
    store.role_text = True
    store.save()
    conversation = conversation_create(user=stranger, profile_id=profile.pk)
    assert EXCERPT not in _answer(fake_openai, stranger, conversation)


def test_a_collection_taken_back_is_not_searched_by_a_conversation_that_named_it(fake_openai, team):
    owner, member, store = team
    profile = _profile(member, fake_openai)
    conversation = conversation_create(user=member, profile_id=profile.pk, store_ids=[store.pk])
    services.store_share_set(
        store=store, actor=owner, organization_id=None, readers=[], managers=[]
    )
    assert EXCERPT not in _answer(fake_openai, member, conversation)


def test_a_text_role_collection_joins_every_readers_text_turns_but_not_coding_ones(
    fake_openai, team
):
    _owner, member, store = team
    store.role_text = True
    store.save()
    text = conversation_create(user=member, profile_id=_profile(member, fake_openai).pk)
    assert EXCERPT in _answer(fake_openai, member, text)
    coding_profile = _profile(member, fake_openai, AIProfile.Role.CODING)
    coding = conversation_create(user=member, profile_id=coding_profile.pk)
    assert EXCERPT not in _answer(fake_openai, member, coding)
    store.role_coding = True
    store.save()
    assert EXCERPT in _answer(fake_openai, member, coding)


def test_a_members_scheduled_run_searches_a_shared_opted_in_collection_until_taken_back(
    fake_openai, team
):
    owner, member, store = team
    store.autonomous_opt_in = True
    store.save()
    profile = _profile(member, fake_openai)
    schedule = schedule_create(
        user=member,
        name="Morning",
        prompt="Where do llamas graze?",
        profile_id=profile.pk,
        every_minutes=60,
        store_ids=[store.pk],
    )

    def run() -> str:
        Schedule.objects.filter(pk=schedule.pk).update(
            next_run_at=timezone.now() - timedelta(minutes=1)
        )
        assert schedules_due() == 1
        answer = Message.objects.filter(role="assistant").latest("pk")
        turn_run(message_id=answer.pk)
        return fake_openai.prompt()

    assert EXCERPT in run()
    services.store_share_set(
        store=store, actor=owner, organization_id=None, readers=[], managers=[]
    )
    assert EXCERPT not in run()


@pytest.mark.django_db(transaction=True)
def test_mcp_search_finds_a_shared_collection_for_a_member_and_never_for_a_stranger(
    live_asgi_server,
):
    organization = OrganizationFactory()
    owner = UserFactory()
    member = UserFactory()
    for person in (owner, member):
        Membership.objects.create(organization=organization, user=person)
    store = services.store_create(owner=owner, name="Team handbook", provider="none")
    add_excerpt(store, "llamas.md", EXCERPT)
    services.store_share_set(
        store=store, actor=owner, organization_id=organization.pk, readers=[], managers=[]
    )
    member_token = api_token_create(user=member, name="mcp")[1]
    stranger_token = api_token_create(user=UserFactory(), name="mcp")[1]
    [(ok, text)] = mcp(live_asgi_server, member_token, [("search", {"query": "llamas graze"})])
    assert ok and EXCERPT in text and "[R1]" in text
    [(ok, text)] = mcp(
        live_asgi_server,
        stranger_token,
        [("search", {"query": "llamas graze", "collection_ids": [store.pk]})],
    )
    assert ok and EXCERPT not in text
