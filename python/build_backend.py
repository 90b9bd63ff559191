"""The PEP 517 build backend of `pip install .` (pyproject.toml; docs/python.md, "Install with pip").

It needs nothing but the standard library, so pip installs nothing into its isolated build
environment and never asks a package index: CMake builds the module as `cmake -DSTRATA_BUILD_PYTHON=ON`
does (one build description, python/CMakeLists.txt) and its install rules lay out the package:

    cmake -S <tree> -B <temporary folder> -DCMAKE_BUILD_TYPE=Release -DSTRATA_BUILD_PYTHON=ON
          (the CLI, tests, examples, benchmarks and strata-mpi off; -DSTRATA_PYTHON_SOURCE_DATA=OFF:
          the module reads the hf_configs installed beside it, never this tree)
    cmake --build <folder> --target strata_python
    cmake --install <folder> --component python --strip   -> strata/{__init__.py, _strata*.so, hf_configs/}

and the wheel is that folder plus its .dist-info. The interpreter CMake builds for is the one pip
runs (sys.executable). Settings: `--config-settings build-dir=PATH` keeps the CMake folder at PATH
(rebuilds there are incremental); $CMAKE_ARGS adds arguments to the configure step;
$CMAKE_BUILD_PARALLEL_LEVEL sets the build's jobs.
"""

import base64
import hashlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
_NAME = "strata"
_SUMMARY = ("Predicted iteration time and per-device memory of distributed deep-learning "
            "training (the Python module of the C++20 library strata)")

# what an sdist carries: enough to build the module (tests, examples, benchmarks stay out)
_SDIST = ["CMakeLists.txt", "LICENSE", "README.md", "pyproject.toml", "cmake", "include",
          "python/CMakeLists.txt", "python/bindings.cpp", "python/build_backend.py",
          "python/strata", "tools/cli/shipped_profiles.hpp.in", "tools/profiles",
          "tools/hf_configs"]


def _version() -> str:
    """The project's version: include/strata/version.hpp, read as CMakeLists.txt reads it."""
    text = (_ROOT / "include" / "strata" / "version.hpp").read_text()
    parts = []
    for part in ("MAJOR", "MINOR", "PATCH"):
        m = re.search(rf"#define STRATA_VERSION_{part} ([0-9]+)", text)
        if m is None:
            raise RuntimeError(f"include/strata/version.hpp: no STRATA_VERSION_{part}")
        parts.append(m.group(1))
    return ".".join(parts)


def _metadata() -> str:
    return (f"Metadata-Version: 2.1\nName: {_NAME}\nVersion: {_version()}\nSummary: {_SUMMARY}\n"
            "License: BSL-1.0\nRequires-Python: >=3.8\n"
            "Classifier: License :: OSI Approved :: Boost Software License 1.0 (BSL-1.0)\n"
            "Classifier: Programming Language :: C++\n"
            "Classifier: Programming Language :: Python :: 3\n")


def _tag() -> str:
    """This interpreter's wheel tag, e.g. cp311-cp311-linux_x86_64."""
    ver = f"{sys.version_info[0]}{sys.version_info[1]}"
    if sys.implementation.name == "cpython":
        interpreter = abi = "cp" + ver
        if sysconfig.get_config_var("Py_DEBUG"):
            abi += "d"
        if sysconfig.get_config_var("Py_GIL_DISABLED"):
            abi += "t"
    else:  # e.g. PyPy: pp39, pypy39_pp73 (from SOABI pypy39-pp73-x86_64-linux-gnu)
        interpreter = {"pypy": "pp"}.get(sys.implementation.name, sys.implementation.name) + ver
        soabi = sysconfig.get_config_var("SOABI") or "none"
        abi = "_".join(soabi.split("-")[:2])
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{interpreter}-{abi}-{platform}"


def _dist_info_files():
    tag = _tag()
    wheel = ("Wheel-Version: 1.0\nGenerator: strata python/build_backend.py\n"
             f"Root-Is-Purelib: false\nTag: {tag}\n")
    return {"METADATA": _metadata().encode(), "WHEEL": wheel.encode(),
            "LICENSE": (_ROOT / "LICENSE").read_bytes()}


def _run(cmd):
    print("+ " + " ".join(shlex.quote(str(c)) for c in cmd), file=sys.stderr, flush=True)
    subprocess.run([str(c) for c in cmd], check=True)


def _build_package(build_dir: Path, staging: Path) -> None:
    """Configures, builds and installs the Python package into staging/strata."""
    configure = ["cmake", "-S", _ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                 "-DSTRATA_BUILD_PYTHON=ON", "-DSTRATA_BUILD_CLI=OFF", "-DSTRATA_BUILD_TESTS=OFF",
                 "-DSTRATA_BUILD_EXAMPLES=OFF", "-DSTRATA_BUILD_BENCH=OFF",
                 "-DSTRATA_BUILD_MPI=OFF", "-DSTRATA_PYTHON_SOURCE_DATA=OFF",
                 f"-DPython3_EXECUTABLE={sys.executable}", "-DSTRATA_PYTHON_INSTALL_DIR=."]
    if (not (build_dir / "CMakeCache.txt").exists() and "CMAKE_GENERATOR" not in os.environ
            and shutil.which("ninja")):
        configure += ["-G", "Ninja"]
    configure += shlex.split(os.environ.get("CMAKE_ARGS", ""))
    _run(configure)
    _run(["cmake", "--build", build_dir, "--target", "strata_python"])
    _run(["cmake", "--install", build_dir, "--component", "python", "--strip",
          "--prefix", staging])


class _Wheel:
    """A wheel being written: every file with its RECORD line."""

    def __init__(self, path: Path):
        self.zip = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED)
        self.record = []

    def add(self, name: str, data: bytes, mode: int = 0o644) -> None:
        info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = (0o100000 | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.record.append(f"{name},sha256={digest},{len(data)}")

    def close(self, dist_info: str) -> None:
        self.record.append(f"{dist_info}/RECORD,,")
        self.zip.writestr(zipfile.ZipInfo(f"{dist_info}/RECORD", date_time=(1980, 1, 1, 0, 0, 0)),
                          "\n".join(self.record) + "\n")
        self.zip.close()


# ---- PEP 517 hooks -------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info = f"{_NAME}-{_version()}.dist-info"
    out = Path(metadata_directory) / dist_info
    out.mkdir(parents=True, exist_ok=True)
    for name, data in _dist_info_files().items():
        (out / name).write_bytes(data)
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    settings = config_settings or {}
    keep = settings.get("build-dir")
    build_dir = Path(keep).resolve() if keep else Path(tempfile.mkdtemp(prefix="strata-pip-"))
    staging = Path(tempfile.mkdtemp(prefix="strata-wheel-"))
    try:
        _build_package(build_dir, staging)
        if not (staging / "strata" / "__init__.py").is_file():
            raise RuntimeError(f"cmake --install left no strata/__init__.py in {staging}")
        base = f"{_NAME}-{_version()}"
        wheel_name = f"{base}-{_tag()}.whl"
        wheel = _Wheel(Path(wheel_directory) / wheel_name)
        for f in sorted(p for p in staging.rglob("*") if p.is_file()):
            mode = 0o755 if os.access(f, os.X_OK) else 0o644
            wheel.add(f.relative_to(staging).as_posix(), f.read_bytes(), mode)
        for name, data in _dist_info_files().items():
            wheel.add(f"{base}.dist-info/{name}", data)
        wheel.close(f"{base}.dist-info")
        return wheel_name
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if not keep:
            shutil.rmtree(build_dir, ignore_errors=True)


def build_sdist(sdist_directory, config_settings=None):
    base = f"{_NAME}-{_version()}"
    name = f"{base}.tar.gz"

    def clean(info: tarfile.TarInfo):
        if "__pycache__" in info.name.split("/"):
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = 0
        return info

    with tarfile.open(Path(sdist_directory) / name, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in _SDIST:
            tar.add(_ROOT / rel, arcname=f"{base}/{rel}", filter=clean)
        pkg_info = _metadata().encode()
        info = clean(tarfile.TarInfo(f"{base}/PKG-INFO"))
        info.size = len(pkg_info)
        tar.addfile(info, io.BytesIO(pkg_info))
    return name
