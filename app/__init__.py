"""The application: the `multiverse` command line and the composition root that builds the team.

The layer on top: it imports the orchestrator, the roles and the kernel (`multiverse/`), and
nothing below imports it. `python -m app.cli` is the `multiverse` command.
"""
