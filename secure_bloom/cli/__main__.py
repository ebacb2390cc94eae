"""``python -m secure_bloom.cli``: the ``secure-bloom`` console script."""

import sys

from . import main

sys.exit(main())
