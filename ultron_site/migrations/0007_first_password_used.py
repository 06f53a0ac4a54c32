from django.db import migrations, models


class Migration(migrations.Migration):
    """A one-time password opens one session: when it did, so a second login with it fails."""

    dependencies = [
        ('ultron_site', '0006_rate_windows'),
    ]

    operations = [
        migrations.AddField(
            model_name='firstpassword',
            name='used_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
