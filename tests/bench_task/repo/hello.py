"""The bench test task's entrypoint: stdlib only, done in well under a second."""

import json
import sys

print(json.dumps({"ok": True, "python": sys.version.split()[0]}))
