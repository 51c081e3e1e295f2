"""``python -m sentcl.data.samples``: regenerate ``data/samples``."""

from . import main

raise SystemExit(main())
