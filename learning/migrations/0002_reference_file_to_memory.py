# The reference files (M14) now belong to memory_addon (issue 28): learning forgets the
# model, the table stays.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("learning", "0001_initial"),
        ("memory_addon", "0006_reference_file"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ReferenceFile")],
            database_operations=[],
        ),
    ]
