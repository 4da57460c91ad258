"""Ray Data and MDS (``pip install 'streamx-data[ray]'``): write a Dataset as MDS with
:class:`MDSDatasink`, read one back with :func:`read_mds`; the code is in
:mod:`streamx.engines`."""

from streamx.engines.ray_datasink import MDSDatasink
from streamx.engines.ray_datasource import MDSDatasource, read_mds

__all__ = ["MDSDatasink", "MDSDatasource", "read_mds"]
