#!/usr/bin/env python
from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    from host import embedded
    from host.env import BadSetting

    try:
        # Help and --help start no database and create no data folder (issue 11).
        if embedded.command_needs_servers(sys.argv):
            embedded.start()
        execute_from_command_line(sys.argv)
    except BadSetting as error:
        sys.exit(f"Cannot start: {error}")


if __name__ == "__main__":
    main()
