"""Primitives: the semantics of every kernel-language op, as njit functions over storage arrays.

Called as ``prim(ctx, *values)`` (see ascendc/lang/surface.py) from the interpreter and from
compiled kernels alike, so both modes share one implementation.
"""
from .vector import *      # noqa: F401,F403
from .reduce import *      # noqa: F401,F403
from .datacopy import *    # noqa: F401,F403
from .cube import *        # noqa: F401,F403
from .atomic import *      # noqa: F401,F403
from .queue import *       # noqa: F401,F403
from .sync import *        # noqa: F401,F403
from .crosscore import *   # noqa: F401,F403
from .pipe import *        # noqa: F401,F403
from .tensor import *      # noqa: F401,F403
from .aipp import *        # noqa: F401,F403
from .shapeinfo import *   # noqa: F401,F403
from .autotensor import *  # noqa: F401,F403
from .gathermask import *  # noqa: F401,F403
