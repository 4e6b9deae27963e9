"""Regenerate every scenario folder next to this file (deterministic: same code, same bytes).

Same as ``python -m pdwatch.sim.scenarios --out samples`` from the repository root;
``--only NAME`` regenerates one folder.
"""

import os
import sys
from pathlib import Path

from pdwatch.sim.scenarios import main

if __name__ == "__main__":
    os.chdir(Path(__file__).resolve().parent.parent)
    raise SystemExit(main(["--out", "samples", *sys.argv[1:]]))
