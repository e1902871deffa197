from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

from host import embedded

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
embedded.start()  # the embedded servers, unless DATABASE_URL / REDIS_URL name others
application = get_wsgi_application()
