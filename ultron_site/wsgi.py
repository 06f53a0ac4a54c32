import os

from ultron_site.startup import prepare

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ultron_site.settings")
# Before the settings load: without DATABASE_URL, start (or attach to) the embedded
# PostgreSQL and set DATABASE_URL; make sure the static directory exists.
prepare(serve=True)

from django.core.wsgi import get_wsgi_application  # noqa: E402

application = get_wsgi_application()
