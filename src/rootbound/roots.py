"""``rootbound.roots``, where users import it; the module lives in its layer, ``rootbound.core.roots``."""

from rootbound.core.roots import *  # noqa: F403
from rootbound.core.roots import __all__ as __all__
