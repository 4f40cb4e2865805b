"""``python -m fxgen`` is the ``fxgen`` command."""

import sys

from fxgen.cli.main import main

sys.exit(main())
