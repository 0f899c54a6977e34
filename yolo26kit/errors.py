"""The kit's exception hierarchy; the CLI maps every KitError to exit code 2."""


class KitError(Exception):
    """Base class of errors the user can fix by changing the command line."""


class UnknownInvestigation(KitError):
    """An investigation name that the catalog does not know."""


class BadParameter(KitError):
    """A parameter that is unknown, of the wrong type, or out of range."""


class DeviceUnavailable(KitError):
    """A device was asked for that this machine does not have."""


class NoInvestigations(KitError):
    """No investigation has a notebook: notebooks/ is missing or empty."""


class BadOutput(KitError):
    """An output folder that is a file, or cannot be written."""


class BadResults(KitError):
    """A results.json or run.json that cannot be read (corrupted, truncated, another schema)."""


class ReproError(KitError):
    """Bad input to `yolo26kit repro` (unknown finding, no evidence, not a repro folder): nothing is written."""


class BisectError(KitError):
    """Bad input to a bisect (unknown claim, empty or missing range): nothing is written."""


class MatrixError(KitError):
    """Bad input to the matrix (unknown stack or investigation, bad parameter): nothing is written."""
