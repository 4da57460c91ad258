"""A bucket on the loopback S3 server (its own module: test modules cannot import
``conftest`` by name when several test directories have one)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class S3:
    """A bucket on the loopback S3 server, reachable at `endpoint`."""

    endpoint: str
    bucket: str
    client: Any

    def url(self, key: str = "") -> str:
        return f"s3://{self.bucket}/{key}"

    def put(self, key: str, data: bytes, *, public: bool = False) -> str:
        acl = {"ACL": "public-read"} if public else {}
        self.client.put_object(Bucket=self.bucket, Key=key, Body=data, **acl)
        return self.url(key)

    def http_url(self, key: str) -> str:
        """Path-style URL of a public object, for plain HTTP clients."""
        return f"{self.endpoint}/{self.bucket}/{key}"

    def get(self, key: str) -> bytes:
        body: bytes = self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        return body
