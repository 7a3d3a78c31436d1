"""unittest runner for test/py: verbose results, the slowest tests with their wall
times, then one closing line "test-py: N passed, N failed, N skipped" and the exit
status.  The times include a class's setUpClass in its first test."""

import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SLOWEST = 15  # how many of the slowest tests the closing table lists


class TimedResult(unittest.TextTestResult):
    """Records each test's wall time, from the end of the previous test to the end
    of this one, so that fixtures built in setUpClass count against the test that
    waited for them."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.times = []
        self._last = time.time()

    # Each traceback is written when its test fails as well as in the closing summary:
    # a run stopped before the summary (a time limit) still says why a test failed.
    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._write_now(self.failures[-1][1])

    def addError(self, test, err):
        super().addError(test, err)
        self._write_now(self.errors[-1][1])

    def _write_now(self, text):
        self.stream.write("\n" + text)
        self.stream.flush()

    def stopTest(self, test):
        super().stopTest(test)
        now = time.time()
        self.times.append((now - self._last, test.id()))
        self._last = now


def main(argv):
    sys.path.insert(0, HERE)
    loader = unittest.TestLoader()
    if argv:
        suite = loader.loadTestsFromNames(argv)
    else:
        suite = loader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    t0 = time.time()
    runner = unittest.TextTestRunner(verbosity=2, stream=sys.stdout, resultclass=TimedResult)
    res = runner.run(suite)
    failed = len(res.failures) + len(res.errors) + len(res.unexpectedSuccesses)
    skipped = len(res.skipped)
    passed = res.testsRun - failed - skipped
    sys.stdout.write("test-py: the slowest tests (s):\n")
    for secs, name in sorted(res.times, reverse=True)[:SLOWEST]:
        sys.stdout.write("  %6.1f  %s\n" % (secs, name))
    sys.stdout.write("test-py: %.0f s\n" % (time.time() - t0))
    sys.stdout.write("test-py: %d passed, %d failed, %d skipped\n" % (passed, failed, skipped))
    return 0 if failed == 0 and res.testsRun > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
