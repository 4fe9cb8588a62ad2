"""``rootbound.boundary``, where users import it; the module lives in its layer, ``rootbound.confine.boundary``."""

from rootbound.confine.boundary import *  # noqa: F403
from rootbound.confine.boundary import __all__ as __all__
