"""What can be wrong with a MIG layout, as domain facts: a ``MigFault`` and a message.

The MIG checks return ``MigProblem``s rather than diagnostics because they know neither where in
a policy file the layout was written nor which rule ID reports it: ``compiler.validate.mig`` maps
each fault to its rule and places it in the file.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class MigFault(enum.Enum):
    UNKNOWN_PROFILE = "no such profile for the model (or not under that name on the driver)"
    COUNT_OVER_MAX = "more instances of a profile than one GPU holds"
    NO_PLACEMENT = "the profiles do not fit one GPU"
    STRATEGY_MISMATCH = "the strategy does not suit the layout"
    UNKNOWN_LAYOUT = "no such named layout for the model"
    NOT_MIG_CAPABLE = "the model has no MIG"
    DRIVER_TOO_OLD = "the profile needs a newer driver branch"
    BAD_DRIVER = "the driver version is not understood"
    EMPTY_DEVICE = "MIG enabled with no MIG device: the GPU offers no capacity"

    @property
    def fatal(self) -> bool:
        """Whether the layout cannot be applied at all (an empty device can: it is only idle)."""
        return self is not MigFault.EMPTY_DEVICE


UNKNOWN_PROFILE = MigFault.UNKNOWN_PROFILE
COUNT_OVER_MAX = MigFault.COUNT_OVER_MAX
NO_PLACEMENT = MigFault.NO_PLACEMENT
STRATEGY_MISMATCH = MigFault.STRATEGY_MISMATCH
UNKNOWN_LAYOUT = MigFault.UNKNOWN_LAYOUT
NOT_MIG_CAPABLE = MigFault.NOT_MIG_CAPABLE
DRIVER_TOO_OLD = MigFault.DRIVER_TOO_OLD
BAD_DRIVER = MigFault.BAD_DRIVER
EMPTY_DEVICE = MigFault.EMPTY_DEVICE


@dataclass(frozen=True)
class MigProblem:
    fault: MigFault
    message: str
    hint: str | None = None

    @property
    def fatal(self) -> bool:
        return self.fault.fatal

    def __str__(self) -> str:
        return self.message
