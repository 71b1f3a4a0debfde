from compiler.cli.main import entrypoint

entrypoint()
