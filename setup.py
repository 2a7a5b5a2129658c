"""Builds the C++ core (src_cpp/) and its binding (cq_core/) with CMake as one extension module.

`pip install .` and `pip install -e .` both come through here: setuptools asks for the extension
`cq_core._core`, and CMakeBuild configures and builds the CMake project at the repository root into
the directory setuptools expects (the package directory itself for editable installs).
"""

import os
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).parent.resolve()


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        import pybind11

        out_dir = Path(self.get_ext_fullpath(ext.name)).parent.resolve()
        build_type = os.environ.get("CQ_BUILD_TYPE", "Release")
        build_temp = Path(self.build_temp) / ext.name
        build_temp.mkdir(parents=True, exist_ok=True)
        cfg = [
            f"-DCMAKE_LIBRARY_OUTPUT_DIRECTORY={out_dir}{os.sep}",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
            f"-DCMAKE_BUILD_TYPE={build_type}",
            "-DCQ_BUILD_PYTHON=ON",
            "-DCQ_BUILD_TESTS=OFF",
        ]
        try:
            import ninja  # noqa: F401  (the build requirement puts ninja on PATH)

            cfg.append("-GNinja")
        except ImportError:
            pass
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build_temp), *cfg], check=True)
        subprocess.run(["cmake", "--build", str(build_temp), "--parallel", jobs], check=True)


setup(ext_modules=[CMakeExtension("cq_core._core")], cmdclass={"build_ext": CMakeBuild})
