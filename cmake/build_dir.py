"""Where setup.py builds the C++ core with CMake, and when a build tree left there must be configured
afresh.

pip builds every `pip install .` in a new isolated environment (a temporary directory holding cmake,
ninja, pybind11, ...) and deletes it afterwards. A CMake cache remembers absolute paths to those
tools, so a build tree reused by the next install points at programs that are gone
(`CMake Error ... ninja --version ... no such file or directory`). So:

- The tree is `build/cmake-<tag>-<hash>` in the source tree, keyed by what makes object files
  incompatible: the compiler (path and version), the Python it builds for (interpreter, version,
  headers, extension suffix) and the build type. Another compiler or Python gets another tree.
- Before each configure the cache is checked against the toolchain at hand (`stale_cache_reason`):
  another source or build directory, another generator, a make program / cmake / compiler other
  than the one this build uses, or any tool the cache names that no longer exists. A stale cache
  is discarded as `cmake --fresh` does (CMakeCache.txt and CMakeFiles/), keeping the object files:
  ninja rebuilds exactly those whose command line changed, since it records each one.

This follows scikit-build-core (a build directory is wiped when the source directory recorded in it
differs) and pybind11's cmake_example (the make program is passed on every configure), and checks
the tools as well, since pip's isolated environments move them on every install.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

CACHE = "CMakeCache.txt"


@dataclass(frozen=True)
class Toolchain:
    """What one build configures with. `compiler` is None when CMake is left to find one itself."""

    source_dir: str
    cmake: str  # the cmake binary itself (pip's `cmake` on PATH is a Python launcher for it)
    generator: str | None  # None: CMake's default generator
    make_program: str | None  # None: whatever the generator finds
    compiler: str | None
    compiler_version: str
    python: str
    python_version: str
    python_include: str
    ext_suffix: str
    build_type: str

    def key(self) -> str:
        """The name of this toolchain's build tree: its Python tag and a hash of everything that
        decides what the object files are. The paths of cmake and ninja are left out: pip puts
        them somewhere new on every install without changing what they build.

        >>> tc = Toolchain("/src", "/x/cmake", "Ninja", "/x/ninja", "/usr/bin/c++", "g++ 12",
        ...                "/v/bin/python", "3.11.7", "/py/include", ".cpython-311-x86_64-linux-gnu.so",
        ...                "Release")
        >>> tc.key()[:-12]
        'cmake-cpython-311-'
        """
        parts = [self.compiler or "", self.compiler_version, self.python, self.python_version,
                 self.python_include, self.ext_suffix, self.build_type]
        digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]
        soabi = self.ext_suffix.split(".")[1] if self.ext_suffix.count(".") >= 2 else "py"
        return f"cmake-{'-'.join(soabi.split('-')[:2])}-{digest}"  # cmake-cpython-311-<digest>


def build_dir(source_dir: Path, toolchain: Toolchain) -> Path:
    """The build tree for `toolchain`: build/<key> under the source tree (git ignores build/).

    >>> tc = Toolchain("/src", "/x/cmake", None, None, None, "", "/v/bin/python", "3.11.7",
    ...                "/py/include", ".cpython-311-x86_64-linux-gnu.so", "Release")
    >>> build_dir(Path("/src"), tc).parent
    PosixPath('/src/build')
    """
    return source_dir / "build" / toolchain.key()


def read_cache(build: Path) -> dict[str, tuple[str, str]]:
    """The entries of build/CMakeCache.txt as name -> (type, value); empty if there is none.

    >>> read_cache(Path("/nonexistent"))
    {}
    """
    try:
        text = (build / CACHE).read_text(errors="replace")
    except OSError:
        return {}
    entries: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        if not line or line.startswith(("#", "//")) or ":" not in line or "=" not in line:
            continue
        name_type, value = line.split("=", 1)
        name, _, kind = name_type.partition(":")
        entries[name] = (kind, value)
    return entries


def _same_file(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def stale_cache_reason(build: Path, toolchain: Toolchain) -> str | None:
    """Why the CMake cache in `build` cannot be reused by a build with `toolchain`, or None if it
    can (or there is no cache).

    >>> tc = Toolchain("/src", "/x/cmake", None, None, None, "", "/v/bin/python", "3.11.7",
    ...                "/py/include", ".cpython-311-x86_64-linux-gnu.so", "Release")
    >>> stale_cache_reason(Path("/nonexistent"), tc) is None
    True
    """
    cache = read_cache(build)
    if not cache:
        return None

    def value(name: str) -> str | None:
        return cache[name][1] if name in cache else None

    home = value("CMAKE_HOME_DIRECTORY")
    if home is not None and not _same_file(home, toolchain.source_dir):
        return f"it was made for the sources in {home}, not {toolchain.source_dir}"
    made_in = value("CMAKE_CACHEFILE_DIR")
    if made_in is not None and not _same_file(made_in, str(build)):
        return f"it was made in {made_in}, not here"
    generator = value("CMAKE_GENERATOR")
    if toolchain.generator is not None and generator != toolchain.generator:
        return f"it was made with the generator {generator!r}, this build uses {toolchain.generator!r}"
    for name, wanted in (("CMAKE_MAKE_PROGRAM", toolchain.make_program),
                         ("CMAKE_COMMAND", toolchain.cmake),
                         ("CMAKE_CXX_COMPILER", toolchain.compiler)):
        cached = value(name)
        if cached is None:
            continue
        if os.path.isabs(cached) and not os.path.exists(cached):
            return f"its {name} {cached} no longer exists"
        if wanted is not None and not _same_file(cached, wanted):
            return f"its {name} is {cached}, this build uses {wanted}"
    for name, (kind, cached) in sorted(cache.items()):
        # Any other tool it found (ar, ranlib, ...): a FILEPATH that is gone was in a build
        # environment that is gone.
        if kind == "FILEPATH" and os.path.isabs(cached) and not os.path.exists(cached):
            return f"its {name} {cached} no longer exists"
    return None


def discard_stale_cache(build: Path, toolchain: Toolchain) -> str | None:
    """Removes the CMake cache of `build` (CMakeCache.txt and CMakeFiles/, as `cmake --fresh`) if
    `stale_cache_reason` finds it stale, keeping the object files; returns the reason, or None if
    the cache was kept. Records the toolchain in build/toolchain.json for whoever looks.

    >>> tc = Toolchain("/src", "/x/cmake", None, None, None, "", "/v/bin/python", "3.11.7",
    ...                "/py/include", ".cpython-311-x86_64-linux-gnu.so", "Release")
    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> discard_stale_cache(d, tc) is None
    True
    """
    reason = stale_cache_reason(build, toolchain)
    if reason is not None:
        (build / CACHE).unlink()
        shutil.rmtree(build / "CMakeFiles", ignore_errors=True)
    build.mkdir(parents=True, exist_ok=True)
    (build / "toolchain.json").write_text(json.dumps(asdict(toolchain), indent=2) + "\n")
    return reason


def _first_line(command: list[str]) -> str:
    try:
        run = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError:
        return ""
    return (run.stdout or run.stderr).strip().splitlines()[0] if (run.stdout or run.stderr).strip() else ""


def _cmake_binary(cmake: str) -> str:
    """The cmake binary behind `cmake` (PyPI's cmake installs a Python launcher on PATH; the cache
    records the binary it runs)."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "where.cmake"
        script.write_text('message("${CMAKE_COMMAND}")\n')
        run = subprocess.run([cmake, "-P", str(script)], capture_output=True, text=True, check=True)
    return run.stderr.strip() or cmake


def _compiler() -> str | None:
    """The C++ compiler CMake will take: $CXX, else c++ on PATH; None if CXX names a launcher
    with arguments or nothing is found (CMake then chooses, and only its existence is checked)."""
    cxx = os.environ.get("CXX", "").split()
    if len(cxx) > 1:
        return None
    return shutil.which(cxx[0] if cxx else "c++")


def detect(source_dir: Path, build_type: str) -> Toolchain:
    """The toolchain this process builds with: cmake on PATH, ninja from the `ninja` package (as
    the build requirements provide it) or PATH, the C++ compiler and this Python."""
    cmake = shutil.which("cmake")
    if cmake is None:
        raise RuntimeError("cq's build needs cmake >= 3.20 on PATH (pip installs it with the build)")
    make_program, compiler = _ninja(), _compiler()
    return Toolchain(
        source_dir=str(source_dir.resolve()),
        cmake=_cmake_binary(cmake),
        generator="Ninja" if make_program else None,
        make_program=make_program,
        compiler=compiler,
        compiler_version=_first_line([compiler, "--version"]) if compiler else "",
        python=sys.executable,
        python_version=sys.version,
        python_include=sysconfig.get_paths()["include"],
        ext_suffix=sysconfig.get_config_var("EXT_SUFFIX") or "",
        build_type=build_type,
    )


def _ninja() -> str | None:
    """The ninja binary: the `ninja` package's (the build requirement), else ninja on PATH. In
    pip's isolated environment the package's BIN_DIR is empty (it looks in the interpreter's own
    directories) while its binary is on PATH, so an empty or wrong BIN_DIR falls back to PATH."""
    try:
        import ninja

        candidate = Path(ninja.BIN_DIR) / "ninja" if ninja.BIN_DIR else None
        if candidate is not None and candidate.is_file():
            return str(candidate)
    except (ImportError, AttributeError):
        pass
    return shutil.which("ninja")
