"""swapadvisor's Python side: PyTorch training steps as dfg graphs, and swap plans run as
PyTorch training steps.

- swapadvisor.torch: plan_training(model, loss_fn, ...), the Python API (docs/torch.md);
- trace, lower, cost, graphstats, cli: the export (the dfg-from-torch command);
- execplan, compiled, torch_cli: the executor (the swapplan-torch command).

From a checkout, `PYTHONPATH=tools` (or bin/ after make) makes it importable; `make
install PREFIX=P` puts it in P/lib/swapadvisor.
"""

__version__ = "1"
