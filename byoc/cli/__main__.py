"""``python -m byoc.cli ...``"""
import sys

from . import main

sys.exit(main())
