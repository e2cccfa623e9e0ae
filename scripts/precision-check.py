#!/usr/bin/env python3
"""Precision checker: a randomized, model-based test of observable-server.

The checker is the package scripts/precision (its docstring says what it
checks and how); this is its command line:

    scripts/precision-check.py --mode sequential            # CI scale
    scripts/precision-check.py --mode concurrent
    scripts/with-postgres scripts/precision-check.py --mode cluster
    scripts/precision-check.py --planted-faults             # each fault is caught
    scripts/precision-check.py --mode sequential --seed 42  # replay a run
    scripts/precision-check --ci        # every mode at CI scale + planted faults
    scripts/precision-check --full      # every mode at full scale
"""

from precision.cli import main

if __name__ == "__main__":
    main()
