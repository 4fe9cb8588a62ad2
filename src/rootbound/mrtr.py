"""``rootbound.mrtr``, where users import it; the module lives in its layer, ``rootbound.core.mrtr``."""

from rootbound.core.mrtr import *  # noqa: F403
from rootbound.core.mrtr import __all__ as __all__
