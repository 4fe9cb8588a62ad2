"""``rootbound.uri``, where users import it; the module lives in its layer, ``rootbound.core.uri``."""

from rootbound.core.uri import *  # noqa: F403
from rootbound.core.uri import __all__ as __all__
