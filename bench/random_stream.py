"""Writes the raw 32-bit words of the counter-based generator to stdout, for external batteries.

Block j of (key, stream) gives the four words w0..w3 of Philox4x32-10, in the
order j = 0, 1, 2, ... (little-endian uint32), until the reader closes the pipe:

    python bench/random_stream.py [--key K] [--stream S] | dieharder -g 200 -a
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from relucore import _core


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--key", type=int, default=20260101)
    ap.add_argument("--stream", type=int, default=0)
    ap.add_argument("--blocks", type=int, default=1 << 18, help="blocks per write")
    args = ap.parse_args()
    buf = np.empty((args.blocks, 4), dtype=np.uint32)
    out = sys.stdout.buffer
    block = 0
    try:
        while True:
            _core.counter_words(args.key, args.stream, block, buf)
            out.write(buf.tobytes())
            block += args.blocks
    except (BrokenPipeError, KeyboardInterrupt):
        sys.stderr.close()


if __name__ == "__main__":
    main()
