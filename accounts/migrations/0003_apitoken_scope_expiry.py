from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0002_apitoken"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="scope",
            field=models.CharField(
                choices=[
                    ("read_write", "Read and write"),
                    ("read_only", "Read only"),
                    ("bank_only", "Project banks only"),
                ],
                default="read_write",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(
                blank=True, help_text="After this moment the token no longer works.", null=True
            ),
        ),
    ]
