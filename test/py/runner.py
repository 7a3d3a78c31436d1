"""unittest runner for test/py: verbose results, then one closing line
"test-py: N passed, N failed, N skipped" and the exit status."""

import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv):
    sys.path.insert(0, HERE)
    loader = unittest.TestLoader()
    if argv:
        suite = loader.loadTestsFromNames(argv)
    else:
        suite = loader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    t0 = time.time()
    res = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    failed = len(res.failures) + len(res.errors) + len(res.unexpectedSuccesses)
    skipped = len(res.skipped)
    passed = res.testsRun - failed - skipped
    sys.stdout.write("test-py: %.0f s\n" % (time.time() - t0))
    sys.stdout.write("test-py: %d passed, %d failed, %d skipped\n" % (passed, failed, skipped))
    return 0 if failed == 0 and res.testsRun > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
