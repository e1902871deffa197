from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("bridges", "0002_delivery_target"),
    ]

    operations = [
        migrations.AddField(
            model_name="inboundmessage",
            name="chat_id",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
        migrations.AddField(
            model_name="inboundmessage",
            name="sender_id",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
        migrations.AddField(
            model_name="inboundmessage",
            name="thread_id",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
    ]
