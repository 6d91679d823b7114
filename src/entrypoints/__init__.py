"""Entry points and the composition root: the ``upgrader`` command (``cli.py`` and its
subcommands), the ASGI factory (``asgi.py``), the app over a platform (``app.py``) and
what one process runs (``runtime.py``). Nothing below imports from here."""
