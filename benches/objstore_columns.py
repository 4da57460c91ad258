"""The columns of ``bench_objstore.py``'s table: what each row reports, in order."""

from __future__ import annotations

COLUMNS = [
    ("server", "server", ""),
    ("workload", "workload", ""),
    ("streamx_sps", "streamx samples/s", ",.0f"),
    ("litdata_sps", "LitData samples/s", ",.0f"),
    ("webdataset_sps", "WebDataset samples/s", ",.0f"),
    ("streaming_sps", "mosaic samples/s", ",.0f"),
    ("vs_litdata", "vs LitData", ".2f"),
    ("vs_webdataset", "vs WebDataset", ".2f"),
    ("vs_streaming", "vs mosaic", ".2f"),
    ("streamx_ttfs", "streamx TTFS s", ".2f"),
    ("litdata_ttfs", "LitData TTFS s", ".2f"),
    ("webdataset_ttfs", "WebDataset TTFS s", ".2f"),
    ("streaming_ttfs", "mosaic TTFS s", ".2f"),
    ("streamx_mbps", "streamx MB/s", ".0f"),
    ("curl_mbps", "curl MB/s", ".0f"),
    ("of_curl", "of curl", ".2f"),
    ("correct", "correct", ""),
]

PYSSL_COLUMNS = [
    ("streamx_pyssl_sps", "streamx via Python ssl samples/s", ",.0f"),
]
WHOLE_COLUMNS = [
    ("streamx_whole_sps", "streamx no-ranges samples/s", ",.0f"),
    ("streamx_whole_ttfs", "streamx no-ranges TTFS s", ".2f"),
]
# Each library's best run: the share of the machine's cores busy over its epoch (everything on
# the machine, the server included) and the CPU seconds nginx spent serving it.
CPU_COLUMNS = [
    ("streamx_busy", "streamx: cores busy", ".0%"),
    ("streamx_server_cpu_s", "streamx: nginx CPU s", ".2f"),
    ("litdata_busy", "LitData: cores busy", ".0%"),
    ("litdata_server_cpu_s", "LitData: nginx CPU s", ".2f"),
]
