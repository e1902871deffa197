# The two models move here from memory_addon in Django's state only: their tables keep
# the names memory_addon made them under, and no row moves.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("addons", "0001_initial"),
        # The tables exist once memory_addon made them, on a fresh database too.
        ("memory_addon", "0002_addon_installation"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="AddonSetting",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("addon", models.CharField(max_length=80)),
                        ("key", models.CharField(max_length=80)),
                        ("value", models.JSONField()),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="addon_settings",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "memory_addon_addonsetting",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("user", "addon", "key"), name="unique_addon_setting"
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="AddonInstallation",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("addon", models.CharField(max_length=80)),
                        ("enabled", models.BooleanField(default=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="addon_installations",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "memory_addon_addoninstallation",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("user", "addon"), name="unique_addon_installation"
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
