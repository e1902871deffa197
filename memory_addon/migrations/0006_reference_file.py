# The reference files (M14) move from learning to memory_addon (issue 28): only the state
# moves, the table and its rows stay as they are.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory_addon", "0005_settings_to_addons"),
        ("learning", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ReferenceFile",
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
                        ("name", models.CharField(max_length=255)),
                        ("tool", models.CharField(blank=True, max_length=80)),
                        (
                            "origin",
                            models.CharField(
                                choices=[("upload", "Uploaded"), ("folder", "Server folder")],
                                max_length=16,
                            ),
                        ),
                        ("path", models.CharField(blank=True, max_length=1024)),
                        ("content", models.TextField(blank=True)),
                        ("approved_sha256", models.CharField(blank=True, max_length=64)),
                        ("approved_at", models.DateTimeField(blank=True, null=True)),
                        ("send", models.BooleanField(default=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "owner",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="approved_reference_files",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "learning_referencefile",
                        "ordering": ["name", "id"],
                        "constraints": [
                            models.UniqueConstraint(
                                condition=models.Q(("origin", "folder")),
                                fields=("owner", "path"),
                                name="one_reference_per_folder_file",
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
