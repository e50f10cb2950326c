"""Print CPU, memory and disk figures of this machine as `key: value` lines."""

import os
import shutil
import sys


def memory() -> list[str]:
    fields = {}
    with open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return [
        f"mem_total: {fields.get('MemTotal', '?')}",
        f"mem_available: {fields.get('MemAvailable', '?')}",
    ]


def cpu() -> list[str]:
    one, five, fifteen = os.getloadavg()
    return [f"cpus: {os.cpu_count()}", f"load: {one:.2f} {five:.2f} {fifteen:.2f}"]


def disk() -> list[str]:
    usage = shutil.disk_usage("/")
    return [f"disk_total_gb: {usage.total / 1e9:.1f}", f"disk_free_gb: {usage.free / 1e9:.1f}"]


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    parts = {"cpu": cpu, "memory": memory, "disk": disk}
    chosen = parts.values() if what == "all" else [parts[what]]
    print("\n".join(line for fn in chosen for line in fn()))
