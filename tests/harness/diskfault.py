"""Build and drive tests/harness/diskfault.c: I/O faults (EIO on read or write, short writes)
on the files of one directory only, switched on and off while the server runs."""
import shutil
import subprocess
from pathlib import Path

SRC = Path(__file__).with_name("diskfault.c")


def build(out_dir: Path) -> Path:
    """Compile the shim into out_dir; returns the .so path."""
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is needed to build the disk fault shim"
    lib = Path(out_dir) / "libdiskfault.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o", str(lib), str(SRC), "-ldl"],
                   check=True)
    return lib


class DiskFault:
    """Faults on the files under `data_dir` of a process started with `env()`."""

    def __init__(self, lib: Path, data_dir: Path, ctl_dir: Path):
        self.lib, self.data_dir, self.ctl = lib, Path(data_dir).resolve(), Path(ctl_dir)
        self.ctl.mkdir(parents=True, exist_ok=True)

    def env(self) -> dict:
        """Environment for the server process."""
        return {"LD_PRELOAD": str(self.lib), "DISKFAULT_DIR": str(self.data_dir), "DISKFAULT_CTL": str(self.ctl)}

    def on(self, fault: str):
        """Switch on `read` (EIO), `write` (EIO) or `short` (short writes)."""
        assert fault in ("read", "write", "short"), fault
        (self.ctl / fault).touch()

    def off(self, fault: str):
        """Switch the fault off."""
        (self.ctl / fault).unlink(missing_ok=True)

    def short_write_seen(self) -> bool:
        """Whether a write was actually shortened."""
        return (self.ctl / "short.hit").exists()
