"""Errors that the CLI turns into a one-line message and exit code 2."""


class InputError(ValueError):
    """Bad user input: an unknown key, a wrong type, a value out of range.

    The message is one line that names the field and what is allowed.
    """
