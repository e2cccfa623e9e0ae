"""The parts of the checker, one job each. Each is a mixin of `Checker`
(precision/checker.py), which holds the state they share: the model (`st`,
`log`, `observers`), the `report`, the `rng`, the counts (`stats`) and the
transport (`req`, `instances`)."""

from .feed import FeedChecks
from .longpolls import LongPollChecks
from .observers import ObserverChecks
from .queries import QueryChecks
from .reads import ReadChecks
from .restarts import RestartChecks
from .streams import StreamChecks
from .writes import WriteChecks

__all__ = ["FeedChecks", "LongPollChecks", "ObserverChecks", "QueryChecks", "ReadChecks", "RestartChecks", "StreamChecks", "WriteChecks"]
