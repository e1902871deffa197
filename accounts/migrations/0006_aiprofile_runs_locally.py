from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0005_binding_bridges"),
    ]

    operations = [
        migrations.AddField(
            model_name="aiprofile",
            name="runs_locally",
            field=models.BooleanField(
                default=False,
                help_text="The model runs on this machine: what the host sends it is not masked. Leave off for any outside service.",
            ),
        ),
    ]
