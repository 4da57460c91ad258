"""What a cold epoch costs in requests: counts by kind, requests per GB, and a price.

``streamx bench`` counts the requests its streaming DataLoader slice sent (from the
iteration metrics, so DataLoader workers are included), and scales them to one epoch of the
whole split by bytes. Prices are per 1,000 requests, S3 Standard's by default: GET and HEAD
at $0.0004, PUT, POST and LIST at $0.005 (us-east-1, as published by AWS; other stores and
regions differ, hence the options).
"""

from __future__ import annotations

from typing import TypedDict

from streamx.runtime.metrics import Snapshot
from streamx.sim.requests import S3_GET_PER_1000, S3_PUT_PER_1000

__all__ = [
    "S3_GET_PER_1000",
    "S3_PUT_PER_1000",
    "RequestCost",
    "request_cost",
    "request_rows",
]

_GB = 1e9


class RequestCost(TypedDict):
    """Requests of the measured slice and their cost, and the same scaled to an epoch."""

    get: int
    ranged_get: int
    head: int
    list: int
    put: int
    bytes_received: int
    requests_per_gb: float
    get_price_per_1000: float
    put_price_per_1000: float
    cost: float
    epoch_bytes: int
    epoch_requests: float
    epoch_cost: float


def request_cost(
    before: Snapshot, after: Snapshot, epoch_bytes: int, get_price: float, put_price: float
) -> RequestCost:
    """The requests counted between two metrics snapshots, priced and scaled to an epoch
    of ``epoch_bytes``."""
    counts = {
        key: int(after[key]) - int(before[key])  # type: ignore[literal-required]
        for key in (
            "requests_get",
            "requests_ranged_get",
            "requests_head",
            "requests_list",
            "requests_put",
            "bytes_received",
        )
    }
    reads = counts["requests_get"] + counts["requests_ranged_get"] + counts["requests_head"]
    writes = counts["requests_list"] + counts["requests_put"]
    received = counts["bytes_received"]
    per_gb = (reads + writes) / (received / _GB) if received else 0.0
    cost = (reads * get_price + writes * put_price) / 1000
    scale = epoch_bytes / received if received else 0.0
    return {
        "get": counts["requests_get"],
        "ranged_get": counts["requests_ranged_get"],
        "head": counts["requests_head"],
        "list": counts["requests_list"],
        "put": counts["requests_put"],
        "bytes_received": received,
        "requests_per_gb": per_gb,
        "get_price_per_1000": get_price,
        "put_price_per_1000": put_price,
        "cost": cost,
        "epoch_bytes": epoch_bytes,
        "epoch_requests": (reads + writes) * scale,
        "epoch_cost": cost * scale,
    }


def request_rows(cost: RequestCost) -> list[tuple[str, str]]:
    """Rows for the bench's table."""
    return [
        (
            "requests (streaming)",
            f"{cost['get']:,} GET, {cost['ranged_get']:,} ranged GET, {cost['head']:,} HEAD, "
            f"{cost['list']:,} LIST, {cost['put']:,} PUT for {cost['bytes_received']:,} B",
        ),
        (
            "request cost",
            f"{cost['requests_per_gb']:,.1f} requests/GB (GB = 10^9 B); est. "
            f"{cost['epoch_requests']:,.0f} requests, ${cost['epoch_cost']:,.4f} per epoch "
            f"at ${cost['get_price_per_1000']:g} (GET, HEAD) and "
            f"${cost['put_price_per_1000']:g} (PUT, LIST) per 1,000",
        ),
    ]
