"""The library's exception types: one base class, so callers can catch everything we raise on purpose.

Every error raised on purpose for bad input derives from :class:`InvalidInputError` (a ``ValueError``,
so existing ``except ValueError`` code keeps working); its message says what is wrong, where (file
and line for corpus files) and what to do. Unexpected failures stay the exceptions Python raises.
"""

from __future__ import annotations

import os


class HFQueryGenError(Exception):
    """Base class of every exception hf-querygen raises on purpose."""


class InvalidInputError(HFQueryGenError, ValueError):
    """Input that the called function cannot accept: the message names the argument and the fix."""


class CorpusFormatError(InvalidInputError):
    """A malformed record in a raw corpus file; the message names file, line/record and the problem."""

    def __init__(self, path: str | os.PathLike, line: int | str | None, message: str):
        self.path = str(path)
        self.line = line
        self.reason = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class ModelFolderError(InvalidInputError):
    """A model or index folder that is missing, incomplete or corrupted (names the folder and the file)."""


class CorpusFileMissingError(InvalidInputError, FileNotFoundError):
    """A raw corpus file or folder that a builder needs is not there (names the path and the fix)."""


class OutputExistsError(InvalidInputError, FileExistsError):
    """An output path that holds something the call may not replace: a folder hf-querygen did not
    write (the message names its files) or, without ``overwrite``, one it did."""


class HubPushError(HFQueryGenError):
    """A push to the Hub that cannot start or did not succeed (offline, no or a rejected token, the Hub
    unreachable, the server's refusal); the message names the repository and what to do."""


class DegenerateOutputWarning(UserWarning):
    """A model's output that is empty, only punctuation or one word repeated: the model is probably
    under-trained (a smoke-sized run); warned once per model."""


class CorpusCountWarning(UserWarning):
    """A built corpus config whose row counts differ from the counts recorded in its dataset card."""


class UnknownNameError(InvalidInputError, KeyError):
    """A name looked up in one of our tables (preset, training preset) that is not there; the message
    lists the known names. Also a ``KeyError``, so lookups written against a dict keep working."""

    # KeyError's __str__ would quote the whole message: keep the plain one
    __str__ = BaseException.__str__
