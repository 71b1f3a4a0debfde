"""The command line (``gpupolicy``); all file and terminal I/O of the compiler lives here."""
