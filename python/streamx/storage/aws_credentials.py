"""Whether, and which, AWS credentials this process has: one lookup, one cache.

Keys in the environment are read as they are, without importing botocore. Anything else
is botocore's own chain (profiles, SSO, roles, container and instance metadata), resolved
through a session and never a client. Resolving the chain may ask the instance metadata
service, far too slow to repeat per shard, so the answer is kept per AWS environment
(``forget_credentials`` drops it, for tests that rewrite botocore's files).

The lookup has three answers, because its callers disagree on a lookup that fails (botocore
missing, or raising): ``credentials_found`` says ``None`` then, and each caller decides.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AWS_CREDENTIAL_ENV",
    "AWS_ENV",
    "CREDENTIAL_PLACES",
    "BotocoreChain",
    "botocore_chain",
    "credentials_found",
    "env_fingerprint",
    "forget_credentials",
    "has_credentials",
]

# What the botocore chain's answer depends on, besides files it reads.
AWS_CREDENTIAL_ENV = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_EC2_METADATA_DISABLED",
)
# The credentials' environment plus the region: what an S3 client built now depends on.
AWS_ENV = (*AWS_CREDENTIAL_ENV, "AWS_DEFAULT_REGION", "AWS_REGION")

CREDENTIAL_PLACES = (
    "the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE), the shared "
    "credentials and config files (AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE, by default "
    "~/.aws/credentials and ~/.aws/config), and the rest of botocore's chain (web identity, "
    "SSO, container and instance metadata)"
)

# Profile settings that change the endpoint, addressing or TLS of botocore's requests.
_BOTOCORE_ONLY_PROFILE_KEYS = (
    "endpoint_url",
    "services",
    "s3",
    "ca_bundle",
    "use_fips_endpoint",
    "use_dualstack_endpoint",
)


@dataclass(frozen=True)
class BotocoreChain:
    """What botocore's chain resolved in one process."""

    pid: int
    # True or False: what the chain answered; None: botocore is missing or raised.
    found: bool | None
    credentials: Any  # botocore's (possibly refreshing) credentials when found, else None
    region: str  # the profile's region, or ""
    # The profile sets endpoints or TLS in ways only botocore applies (or could not be read).
    botocore_only: bool


# One entry: the lookup for the AWS environment now (a changed environment replaces it).
_CACHE: dict[tuple[str | None, ...], BotocoreChain] = {}


def env_fingerprint() -> tuple[str | None, ...]:
    """The AWS environment variables' values now: a cache key for anything built from them."""
    return tuple(os.environ.get(name) for name in AWS_ENV)


def forget_credentials() -> None:
    """Drop what botocore's chain resolved (tests use this after rewriting its files)."""
    _CACHE.clear()


def _keys_in_env() -> bool:
    return bool(os.environ.get("AWS_ACCESS_KEY_ID") and os.environ.get("AWS_SECRET_ACCESS_KEY"))


def credentials_found() -> bool | None:
    """Whether the environment or botocore's chain holds AWS credentials; ``None`` when the
    lookup itself failed (botocore missing or raising), which callers weigh differently."""
    if _keys_in_env():
        return True
    # The answer is a plain value, so a forked worker may keep its parent's.
    return _lookup(same_process=False).found


def has_credentials() -> bool:
    """Whether credentials were found for sure: a lookup that failed counts as none."""
    return credentials_found() is True


def botocore_chain() -> BotocoreChain:
    """botocore's chain, resolved in this process: a parent's refreshing credentials (and
    their lock) are not reused after a fork."""
    return _lookup(same_process=True)


def _lookup(*, same_process: bool) -> BotocoreChain:
    key = env_fingerprint()
    found = _CACHE.get(key)
    if found is None or (same_process and found.pid != os.getpid()):
        found = _resolve()
        _CACHE.clear()
        _CACHE[key] = found
    return found


def _resolve() -> BotocoreChain:
    pid = os.getpid()
    try:
        import botocore.session
    except ImportError:
        return BotocoreChain(pid, None, None, "", True)
    try:
        session = botocore.session.get_session()
        credentials = session.get_credentials()
    except Exception:
        return BotocoreChain(pid, None, None, "", True)  # s3fs reports it in botocore's words
    try:
        profile = session.get_scoped_config()
        botocore_only = any(profile.get(name) for name in _BOTOCORE_ONLY_PROFILE_KEYS)
        region = str(session.get_config_variable("region") or "")
    except Exception:
        botocore_only, region = True, ""
    return BotocoreChain(pid, credentials is not None, credentials, region, botocore_only)
