"""An output that is one of the tool's inputs is refused before anything is written
(docs/robustness.md): dfg-from-torch -o vs its FILE.py, swapplan-torch --report and
--save-state vs its plan, graph, --init, --inputs and FILE.py.  The same file is found
by device and inode, so a hard link or a symlink to an input counts too.

Run by test/py/run.sh."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.environ.get("DFG_TEST_BIN", os.path.join(ROOT, "bin"))


def tool(name, args):
    return subprocess.run([sys.executable, os.path.join(BIN, name)] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)


class OutputIsInput(unittest.TestCase):
    def setUp(self):
        self.wd = tempfile.mkdtemp(prefix="outin.")
        self.model = os.path.join(self.wd, "m.py")
        shutil.copy(os.path.join(HERE, "models.py"), self.model)
        self.plan = os.path.join(self.wd, "plan.json")
        self.graph = os.path.join(self.wd, "graph.json")
        for p in (self.plan, self.graph):
            with open(p, "w") as f:
                f.write('{"format": "dfg"}\n')

    def tearDown(self):
        shutil.rmtree(self.wd)

    def unchanged(self, path, before):
        with open(path, "rb") as f:
            self.assertEqual(f.read(), before, "%s was written" % path)

    def read(self, path):
        with open(path, "rb") as f:
            return f.read()

    def test_dfg_from_torch_output_is_model_file(self):
        link = os.path.join(self.wd, "link.py")
        os.link(self.model, link)
        before = self.read(self.model)
        for out in (self.model, link):
            r = tool("dfg-from-torch", [self.model + ":small_cnn", "--batch", "4", "-o", out])
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("is the input", r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.unchanged(self.model, before)

    def test_swapplan_torch_outputs_are_inputs(self):
        sym = os.path.join(self.wd, "sym.json")
        os.symlink(self.graph, sym)
        for flag, out, victim in (("--report", self.plan, self.plan), ("--save-state", sym, self.graph),
                                  ("--report", self.model, self.model)):
            before = self.read(victim)
            r = tool("swapplan-torch", [self.plan, "--graph", self.graph, self.model + ":small_cnn", flag, out])
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("is the input", r.stderr)
            self.unchanged(victim, before)

    def test_swapplan_torch_output_is_stdin(self):
        # PLAN read from stdin (a file redirected, then a pipe), the report sent to /dev/stdin
        before = self.read(self.plan)
        for out in ("/dev/stdin", "/dev/fd/0"):
            with open(self.plan) as f:
                r = subprocess.run([sys.executable, os.path.join(BIN, "swapplan-torch"), "-", "--graph",
                                    self.graph, self.model + ":small_cnn", "--report", out], stdin=f,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("is the input - (stdin)", r.stderr)
            self.unchanged(self.plan, before)
        r = subprocess.run(["bash", "-c", 'cat "$1" | "$2" "$3" - --graph "$4" "$5" --save-state /dev/stdin',
                            "-", self.plan, sys.executable, os.path.join(BIN, "swapplan-torch"), self.graph,
                            self.model + ":small_cnn"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("is the input - (stdin)", r.stderr)


if __name__ == "__main__":
    unittest.main()
