from django.db import migrations, models
from django.db.models import F


def keep_slack_signing_secrets(apps, schema_editor):
    """A Slack binding's secret was Slack's signing secret: it keeps verifying requests.

    The webhook secret stays as it was, so relays verifying answers with it keep working
    until the person rotates it to a `whsec_` one.
    """
    binding = apps.get_model("accounts", "MessagingBinding")
    binding.objects.filter(bridge="slack").update(
        platform_secret_encrypted=F("webhook_secret_encrypted")
    )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0006_aiprofile_runs_locally"),
    ]

    operations = [
        migrations.AddField(
            model_name="messagingbinding",
            name="platform_secret_encrypted",
            field=models.TextField(blank=True, editable=False),
        ),
        migrations.RunPython(keep_slack_signing_secrets, migrations.RunPython.noop),
    ]
