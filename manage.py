#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ultron_site.settings")
    # Before the settings load: without DATABASE_URL, start (or attach to) the embedded
    # PostgreSQL and set DATABASE_URL; runserver also needs the static directory.
    from ultron_site.startup import prepare

    prepare(serve=sys.argv[1:2] == ["runserver"])
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
