"""The typed data passed between stages: the policy language (SPEC §4) as pydantic models
(``common``, ``fleet``, ``team``; ``schemas/`` is generated from them by ``schemas``), and the
lowered objects (``manifest``) with the summary the whole-output passes read (``inventory``).

No re-exports: importing ``compiler.model.manifest`` must not import pydantic (start-up cost).
"""
