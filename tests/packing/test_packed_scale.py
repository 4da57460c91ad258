"""``PackedDataset`` over 10^10 documents: the first sequences, a state dict, an exact resume
and a late checkpoint of 8 ranks x 8 workers loaded and resumed, all under a 3 GiB
address-space limit with under 1 GiB resident. The documents' order is evaluated a window
at a time (a whole permutation would be 80 GB) and the windows done are runs and counts (a
set of them would hold up to 10^7 ids)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

_SCRIPT = textwrap.dedent(
    """
    import json
    import resource

    import numpy as np

    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    from streamx import PackedDataset
    from streamx.packing.windows_done import Progress

    N = 10**10

    class Documents:  # each document made from its id: no data to read
        def __len__(self):
            return N

        def __getitem__(self, i):
            return {"tokens": np.arange(i % 97 + 1, dtype=np.int64) + i % 1000}

    config = dict(seq_len=256, mode="best_fit", shuffle=True, seed=5, buffer_size=1024)
    packed = PackedDataset(Documents(), **config)
    stream = iter(packed)
    head = [next(stream)["input_ids"].tolist() for _ in range(3)]
    state = json.loads(json.dumps(packed.state_dict()))
    print("state_bytes", len(json.dumps(state)))
    resumed = PackedDataset(Documents(), **config)
    resumed.load_state_dict(state)
    after = next(stream)["input_ids"].tolist()
    print("resumed_exactly", next(iter(resumed))["input_ids"].tolist() == after)

    ids = packed.window_documents(0)
    print("window", len(ids), len(np.unique(ids)), int(ids.min()) >= 0, int(ids.max()) < N)
    print("shuffled", bool((ids != np.arange(1024)).any()))

    # A late checkpoint: 8 ranks x 8 workers, each worker 150,000 windows in.
    consumers, turns = 64, 150_000
    states = []
    for rank in range(8):
        finished = {c: turns for c in range(rank * 8, rank * 8 + 8)}
        progress = Progress(consumers=consumers, finished=finished).state()
        states.append({"config": packed.config(), "epoch": 0, **progress, "partial": {}})
    merged = json.loads(json.dumps(PackedDataset.merge_states(states)))
    print("merged_bytes", len(json.dumps(merged)))
    print("merged_done", PackedDataset.windows_done(merged))
    late = PackedDataset(Documents(), **config)
    late.load_state_dict(merged)
    first = next(iter(late))["input_ids"].tolist()
    print("late_first", first == late.pack_window(consumers * turns)[0].input_ids.tolist())

    with open("/proc/self/status") as status:
        hwm = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    print("hwm_kib", hwm)
    """
)


def test_ten_billion_documents_pack_and_resume_in_bounded_memory() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert int(lines["state_bytes"]) < 1_000, done.stdout
    assert lines["resumed_exactly"] == "True", done.stdout
    assert lines["window"] == "1024 1024 True True", done.stdout
    assert lines["shuffled"] == "True", done.stdout
    assert int(lines["merged_bytes"]) < 2_000  # 64 counts, done.stdout
    assert lines["merged_done"] == f"[(0, {64 * 150_000})]", done.stdout
    assert lines["late_first"] == "True", done.stdout
    assert int(lines["hwm_kib"]) < 1 << 20, done.stdout
