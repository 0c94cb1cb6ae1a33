"""`python3 -m edgeroll_env serve ...`"""

import sys

from .cli import main

sys.exit(main())
