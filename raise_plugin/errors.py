"""Errors a user can fix (bad flags, files, configs): shown as one line, never a traceback."""


class UserError(Exception):
    """A one-line message for the user; the command exits with status 2."""
