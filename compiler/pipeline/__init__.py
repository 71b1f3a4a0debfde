"""The one pipeline (``run``) and what a command asks of it (``options``)."""
