"""`python -m launch ...`: see `launch.cli`."""
import sys

from .cli import main

sys.exit(main())
