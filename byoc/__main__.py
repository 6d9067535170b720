"""``python -m byoc ...``: the ``byoc`` command line."""
import sys

from .cli import main

sys.exit(main())
