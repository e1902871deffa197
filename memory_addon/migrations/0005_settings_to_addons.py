# AddonSetting and AddonInstallation now belong to the addons app (its 0002): they leave
# this app's state only; their tables and rows stay as they are.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memory_addon", "0004_bank_switches"),
        ("addons", "0002_settings_from_memory"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="AddonSetting"),
                migrations.DeleteModel(name="AddonInstallation"),
            ],
            database_operations=[],
        ),
    ]
