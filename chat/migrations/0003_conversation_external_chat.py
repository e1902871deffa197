from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0007_binding_platform_secret"),
        ("chat", "0002_conversation_binding"),
        ("knowledge", "0007_keyword_term_one_index"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="external_chat",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
        migrations.AddField(
            model_name="conversation",
            name="external_thread",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
        migrations.AddConstraint(
            model_name="conversation",
            constraint=models.UniqueConstraint(
                condition=models.Q(
                    ("binding__isnull", False), models.Q(("external_chat", ""), _negated=True)
                ),
                fields=("binding", "external_chat", "external_thread"),
                name="one_conversation_per_external_chat",
            ),
        ),
    ]
