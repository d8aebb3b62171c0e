"""Each replica's GPUs, through NVML (`nvidia-ml-py`): utilisation, its memory, power.

The system sampler (`system_metrics.py`) asks, every 2 s, which GPUs run a compute process of a
replica's process tree (NVML's own list of each device's processes, so a replica's devices are
the ones it really uses, whatever `CUDA_VISIBLE_DEVICES` it was given) and adds, per device
`<i>` (NVML's index on this machine): `system/gpu<i>_util_percent` (the device's utilisation over
NVML's last sample period), `system/gpu<i>_memory_mib` (what the replica's processes hold on it)
and `system/gpu<i>_power_w` (the device's draw). Where no NVIDIA driver answers (no GPU, or the
library is missing) there is nothing to add and NVML is not asked again.

NVML's process list names processes by their pid in the machine's (the driver's) namespace: in
a container whose pids differ, no process matches and no GPU point is written.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)


class GpuUsage:
    """NVML opened once (lazily); `of(pids)` per replica."""

    def __init__(self) -> None:
        self._nvml: Any = None
        self._devices: list[Any] | None = None  # None: not opened yet; []: nothing to ask

    def _open(self) -> list[Any]:
        if self._devices is None:
            self._devices = []
            try:
                import pynvml  # nvidia-ml-py

                pynvml.nvmlInit()
                self._devices = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
                self._nvml = pynvml
            except Exception as error:  # no driver, no GPU: the CPU and memory points only
                log.debug("no GPU metrics: %s", error)
        return self._devices

    def of(self, pids: set[int]) -> dict[str, float]:
        """The GPU points of the devices that run a process of `pids` (none without NVML)."""
        values: dict[str, float] = {}
        for index, device in enumerate(self._open()):
            nvml = self._nvml
            try:
                processes = nvml.nvmlDeviceGetComputeRunningProcesses(device)
                mine = [p for p in processes if p.pid in pids]
                if not mine:
                    continue
                held = sum(p.usedGpuMemory or 0 for p in mine)
                values[f"system/gpu{index}_util_percent"] = float(nvml.nvmlDeviceGetUtilizationRates(device).gpu)
                values[f"system/gpu{index}_memory_mib"] = round(held / 2**20, 1)
                values[f"system/gpu{index}_power_w"] = round(nvml.nvmlDeviceGetPowerUsage(device) / 1000, 1)
            except Exception as error:  # a device that went away, a call this driver lacks
                log.debug("GPU %d: %s", index, error)
        return values
