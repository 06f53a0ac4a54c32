import sys

from ultron.cli import main

sys.exit(main())
