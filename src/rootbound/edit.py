"""``rootbound.edit``, where users import it; the module lives in its layer, ``rootbound.text.edit``."""

from rootbound.text.edit import *  # noqa: F403
from rootbound.text.edit import __all__ as __all__
