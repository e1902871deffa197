from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0007_binding_platform_secret"),
        ("memory_addon", "0006_reference_file"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="memoryscope",
            name="one_scope_per_binding",
        ),
        migrations.AddField(
            model_name="memoryscope",
            name="chat_key",
            field=models.CharField(blank=True, default="", max_length=401),
        ),
        migrations.AddConstraint(
            model_name="memoryscope",
            constraint=models.UniqueConstraint(
                condition=models.Q(("kind", "channel")),
                fields=("binding", "chat_key"),
                name="one_scope_per_external_chat",
            ),
        ),
    ]
