"""``python -m fxgen`` is the ``fxgen`` command."""

import sys

from fxgen._cli import main

sys.exit(main())
