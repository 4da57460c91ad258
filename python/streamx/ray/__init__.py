"""Ray Data and MDS (``pip install 'streamx[ray]'``): write a Dataset as MDS with
:class:`MDSDatasink`, read one back with :func:`read_mds`."""

from streamx.ray.datasink import MDSDatasink
from streamx.ray.datasource import MDSDatasource, read_mds

__all__ = ["MDSDatasink", "MDSDatasource", "read_mds"]
