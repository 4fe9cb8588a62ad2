"""``rootbound.errors``, where users import it; the module lives in its layer, ``rootbound.core.errors``."""

from rootbound.core.errors import *  # noqa: F403
from rootbound.core.errors import __all__ as __all__
