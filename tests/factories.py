from __future__ import annotations

import factory

from accounts.models import Agent, AIProfile, Organization, User

PASSWORD = "correct horse battery staple"


class UserFactory(factory.django.DjangoModelFactory[User]):
    class Meta:
        model = User
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"person{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.org")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def save_password(self, create: bool, extracted: object, **kwargs: object) -> None:
        if create:
            self.save()


class OrganizationFactory(factory.django.DjangoModelFactory[Organization]):
    class Meta:
        model = Organization

    name = factory.Sequence(lambda n: f"Org {n}")
    slug = factory.Sequence(lambda n: f"org-{n}")


class AgentFactory(factory.django.DjangoModelFactory[Agent]):
    class Meta:
        model = Agent

    owner = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"Agent {n}")
    slug = factory.Sequence(lambda n: f"agent-{n}")


class AIProfileFactory(factory.django.DjangoModelFactory[AIProfile]):
    class Meta:
        model = AIProfile

    owner = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"Profile {n}")
    base_url = "http://127.0.0.1:9/v1"
    model = "test-model"
