"""One module per command or group of commands; :mod:`attndyn.cli.app` registers them."""
