"""`python -m jaxgjk`: the main job (see `_demo.main`)."""

import sys

from ._demo import main

sys.exit(main())
