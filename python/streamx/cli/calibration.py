"""The calibration file ``streamx bench`` writes; it lives in
:mod:`streamx.sim.calibration_file`, beside the simulator that reads it."""

from streamx.sim.calibration_file import (
    Calibration,
    DataLoaderRates,
    DecodeRates,
    DownloadRates,
    load_calibration,
    save_calibration,
)

__all__ = [
    "Calibration",
    "DataLoaderRates",
    "DecodeRates",
    "DownloadRates",
    "load_calibration",
    "save_calibration",
]
