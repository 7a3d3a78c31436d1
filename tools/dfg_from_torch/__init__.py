"""dfg_from_torch: export one PyTorch training step as a swapadvisor dfg v1 graph.

The command-line front end is tools/dfg-from-torch (bin/dfg-from-torch after make);
docs/torch.md describes what it captures and how.
"""

__version__ = "1"
