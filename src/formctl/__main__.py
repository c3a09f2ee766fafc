"""``python -m formctl``: the ``formctl`` command, for an environment whose scripts folder is not
on PATH (the same app, the same exit statuses)."""

from formctl.cli.app import main

if __name__ == "__main__":
    main()
