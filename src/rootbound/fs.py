"""``rootbound.fs``, where users import it; the module lives in its layer, ``rootbound.search.rooted_fs``."""

from rootbound.search.rooted_fs import *  # noqa: F403
from rootbound.search.rooted_fs import __all__ as __all__
