"""`python -m yolo26kit` is the `yolo26kit` command."""

import sys

from .cli import main

sys.exit(main())
