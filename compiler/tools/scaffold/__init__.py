"""``gpupolicy init``: scaffolding of a new team file (``command``), its flags (``args``)."""
