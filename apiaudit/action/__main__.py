import sys

from apiaudit.action.run import main

sys.exit(main())
