"""One rank of a real multi-process run: iterates a Parquet, tar or MDS dataset, writes its ids."""

from __future__ import annotations

import json
import sys

from rank_dataset import rank_dataset, sample_id


def main(kind: str, source: str, local: str, out: str) -> None:
    ds = rank_dataset(kind, source, local)
    with open(out, "w") as f:
        json.dump([sample_id(s) for s in ds], f)


if __name__ == "__main__":
    main(*sys.argv[1:5])
