"""``python -m cq_py``: the same command line as ``cq``."""

from cq_py.cli import main

if __name__ == "__main__":
    main()
