import sys

from kctl.broker.main import main

sys.exit(main())
