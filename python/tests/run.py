"""CTest entry of the Python tests: pytest with the given arguments, or exit 77 (skipped) saying why."""
import sys

try:
    import pytest
except ImportError:
    print("SKIPPED: pytest is not installed for " + sys.executable + " (apt-get install python3-pytest)")
    sys.exit(77)

try:
    import numpy  # noqa: F401
except ImportError:
    print("SKIPPED: numpy is not installed for " + sys.executable + " (apt-get install python3-numpy)")
    sys.exit(77)

sys.exit(pytest.main(sys.argv[1:] + ["-p", "no:cacheprovider"]))
