"""Builds the C++ core (src_cpp/) and its binding (cq_core/) with CMake as one extension module.

`pip install .` and `pip install -e .` both come through here: setuptools asks for the extension
`cq_core._core`, and CMakeBuild configures and builds the CMake project at the repository root into
the directory setuptools expects (the package directory itself for editable installs). The CMake
tree is build/cmake-<python>-<hash of the toolchain>, and a cache left there by an earlier build
whose tools are gone or differ (pip's isolated build environments are deleted after each install)
is discarded before configuring: see cmake/build_dir.py.

CQ_PGO=1 makes a Release build with GCC profile-guided (as CPython's --enable-optimizations): an
instrumented core is built first, cmake/pgo_training.py runs a mix of cq's workloads on it, and the
same tree is rebuilt with the counts it wrote. That core runs recursive queries 11–15 % faster, but
the build takes twice as long: measured here, `pip install .` with it took longer than the five
minutes a first install may take (README), so the default builds once, without a profile. If the
training run fails the build goes on without a profile and says so.
"""

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).parent.resolve()
sys.path.insert(0, str(ROOT / "cmake"))
import build_dir  # noqa: E402  cmake/build_dir.py: which CMake tree, and when to configure it afresh


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        import pybind11

        out_dir = Path(self.get_ext_fullpath(ext.name)).parent.resolve()
        build_type = os.environ.get("CQ_BUILD_TYPE", "Release")
        # Not self.build_temp: the CMake tree is keyed by the toolchain and its cache checked
        # against the tools at hand, since pip's build environment of the last install is gone.
        toolchain = build_dir.detect(ROOT, build_type)
        build_temp = build_dir.build_dir(ROOT, toolchain)
        stale = build_dir.discard_stale_cache(build_temp, toolchain)
        if stale:
            print(
                f"cq: configuring {build_temp} afresh, its CMake cache is stale: {stale}",
                file=sys.stderr,
            )
        cmake = toolchain.cmake
        cfg = [
            f"-DCMAKE_LIBRARY_OUTPUT_DIRECTORY={out_dir}{os.sep}",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
            f"-DCMAKE_BUILD_TYPE={build_type}",
            "-DCQ_BUILD_PYTHON=ON",
            "-DCQ_BUILD_TESTS=OFF",
        ]
        if toolchain.generator:
            cfg.append(f"-G{toolchain.generator}")
        if toolchain.make_program:
            cfg.append(f"-DCMAKE_MAKE_PROGRAM:FILEPATH={toolchain.make_program}")
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))

        def build(*options: str) -> None:
            subprocess.run(
                [cmake, "-S", str(ROOT), "-B", str(build_temp), *cfg, *options], check=True
            )
            subprocess.run([cmake, "--build", str(build_temp), "--parallel", jobs], check=True)

        pgo = os.environ.get("CQ_PGO", "0") not in ("0", "", "off", "OFF")
        if pgo:
            trained = build_temp / "pgo-train"
            build(
                "-DCQ_PGO=GENERATE",
                f"-DCMAKE_LIBRARY_OUTPUT_DIRECTORY={trained / 'cq_core'}{os.sep}",
            )
            # (the stage CMake settled on: OFF for compilers without GCC's profile format)
            stage = build_dir.read_cache(build_temp).get("CQ_PGO", ("", ""))[1]
            if stage == "GENERATE" and self._train(build_temp, trained):
                build("-DCQ_PGO=USE")
                return
        build("-DCQ_PGO=OFF")

    @staticmethod
    def _train(build_temp: Path, trained: Path) -> bool:
        """Runs the training mix on the instrumented core in `trained`; False if it failed."""
        for stale in build_temp.rglob("*.gcda"):  # counts of an earlier build of this tree
            stale.unlink()
        try:
            shutil.copy2(ROOT / "cq_core" / "__init__.py", trained / "cq_core" / "__init__.py")
            # pip's isolated build environment reaches its packages through PYTHONPATH: keep it.
            path = [str(trained), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
            run = subprocess.run(
                [sys.executable, str(ROOT / "cmake" / "pgo_training.py")],
                env=env,
                cwd=str(trained),
                capture_output=True,
                text=True,
                check=False,
            )
            failure = (
                f"{run.stdout}{run.stderr}"
                if run.returncode != 0
                else ""
                if any(build_temp.rglob("*.gcda"))
                else "it wrote no counts"
            )
        except OSError as e:
            failure = str(e)
        if failure:
            print(
                "cq: the profile-guided build's training run failed; building without a profile "
                f"(without CQ_PGO=1 none is attempted):\n{failure}",
                file=sys.stderr,
            )
        else:
            print(f"cq: {run.stderr.strip()}", file=sys.stderr)
        return not failure


# setuptools stages a wheel's files in build/lib and keeps what it finds there: a module deleted
# from the sources would still be installed by the next `pip install .`. A fresh staging directory
# per run, outside the tree, holds only this build's files.
_staging = tempfile.mkdtemp(prefix="cq-setuptools-")
atexit.register(shutil.rmtree, _staging, ignore_errors=True)

setup(
    ext_modules=[CMakeExtension("cq_core._core")],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": _staging}},
)
