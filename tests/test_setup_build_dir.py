"""setup.py's CMake build tree (cmake/build_dir.py): which directory a build uses, and when a cache
left there by an earlier build must be discarded. The issue: README's second `pip install` reused
the first one's CMake cache, whose ninja had gone with pip's isolated build environment
(`CMake Error ... ninja --version ... no such file or directory`)."""

from __future__ import annotations

import dataclasses
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load():
    spec = importlib.util.spec_from_file_location("cq_build_dir", ROOT / "cmake" / "build_dir.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses looks the module up while building Toolchain
    spec.loader.exec_module(module)
    return module


bd = _load()


def _tool(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def env(tmp_path):
    """A source tree, a toolchain whose programs exist, and a build tree configured by it."""
    source = tmp_path / "src"
    source.mkdir()
    toolchain = bd.Toolchain(
        source_dir=str(source),
        cmake=_tool(tmp_path / "env1" / "cmake"),
        generator="Ninja",
        make_program=_tool(tmp_path / "env1" / "ninja"),
        compiler=_tool(tmp_path / "bin" / "c++"),
        compiler_version="g++ 12.2.0",
        python=sys.executable,
        python_version="3.11.7",
        python_include="/py/include",
        ext_suffix=".cpython-311-x86_64-linux-gnu.so",
        build_type="Release",
    )
    build = bd.build_dir(source, toolchain)
    build.mkdir(parents=True)
    return source, toolchain, build


def _write_cache(build: Path, toolchain, **overrides: str) -> None:
    entries = {
        "CMAKE_HOME_DIRECTORY:INTERNAL": toolchain.source_dir,
        "CMAKE_CACHEFILE_DIR:INTERNAL": str(build),
        "CMAKE_GENERATOR:INTERNAL": "Ninja",
        "CMAKE_MAKE_PROGRAM:FILEPATH": toolchain.make_program,
        "CMAKE_COMMAND:INTERNAL": toolchain.cmake,
        "CMAKE_CXX_COMPILER:FILEPATH": toolchain.compiler,
        "CMAKE_AR:FILEPATH": toolchain.compiler,
        "CQ_PGO:STRING": "USE",
    }
    for key, value in overrides.items():
        name = next(k for k in entries if k.split(":")[0] == key)
        entries[name] = value
    lines = [
        "# This is the CMakeCache file.",
        "",
        "//Program used to build from build.ninja files.",
    ]
    lines += [f"{k}={v}" for k, v in entries.items()]
    (build / "CMakeCache.txt").write_text("\n".join(lines) + "\n")
    (build / "CMakeFiles").mkdir(exist_ok=True)
    (build / "CMakeFiles" / "cmake.check_cache").write_text("")
    objects = build / "src_cpp" / "CMakeFiles" / "cq_engine.dir"
    objects.mkdir(parents=True, exist_ok=True)
    (objects / "engine.cc.o").write_bytes(b"\x7fELF")


def test_a_cache_made_by_this_toolchain_is_kept(env):
    _, toolchain, build = env
    _write_cache(build, toolchain)
    assert bd.stale_cache_reason(build, toolchain) is None
    assert bd.discard_stale_cache(build, toolchain) is None
    assert (build / "CMakeCache.txt").exists()
    assert (build / "CMakeFiles").is_dir()


def test_the_issue_a_ninja_from_a_deleted_build_environment_makes_the_cache_stale(env, tmp_path):
    _, toolchain, build = env
    _write_cache(build, toolchain)
    shutil.rmtree(tmp_path / "env1")  # pip deletes its isolated build environment
    env2 = dataclasses.replace(
        toolchain,
        cmake=_tool(tmp_path / "env2" / "cmake"),
        make_program=_tool(tmp_path / "env2" / "ninja"),
    )
    assert bd.build_dir(Path(toolchain.source_dir), env2) == build  # same compiler and Python
    reason = bd.stale_cache_reason(build, env2)
    assert reason is not None
    assert "no longer exists" in reason
    assert "env1" in reason
    assert bd.discard_stale_cache(build, env2) == reason
    assert not (build / "CMakeCache.txt").exists()
    assert not (build / "CMakeFiles").exists()
    # The object files stay: ninja rebuilds those whose command line changed.
    assert (build / "src_cpp" / "CMakeFiles" / "cq_engine.dir" / "engine.cc.o").exists()
    assert (build / "toolchain.json").exists()


@pytest.mark.parametrize("name", ["CMAKE_MAKE_PROGRAM", "CMAKE_COMMAND", "CMAKE_CXX_COMPILER"])
def test_another_existing_tool_than_this_build_uses_makes_the_cache_stale(env, tmp_path, name):
    _, toolchain, build = env
    other = _tool(tmp_path / "elsewhere" / "tool")
    _write_cache(build, toolchain, **{name: other})
    reason = bd.stale_cache_reason(build, toolchain)
    assert reason is not None
    assert name in reason
    assert other in reason


def test_a_missing_compiler_or_other_tool_makes_the_cache_stale(env, tmp_path):
    _, toolchain, build = env
    _write_cache(build, toolchain, CMAKE_AR=str(tmp_path / "gone" / "ar"))
    assert "CMAKE_AR" in bd.stale_cache_reason(build, toolchain)
    unknown = dataclasses.replace(toolchain, compiler=None)  # CXX with a launcher: CMake chooses
    _write_cache(build, toolchain, CMAKE_CXX_COMPILER=str(tmp_path / "gone" / "g++"))
    assert "CMAKE_CXX_COMPILER" in bd.stale_cache_reason(build, unknown)


def test_another_source_tree_build_tree_or_generator_makes_the_cache_stale(env, tmp_path):
    _, toolchain, build = env
    _write_cache(build, toolchain, CMAKE_HOME_DIRECTORY=str(tmp_path / "old-clone"))
    assert "old-clone" in bd.stale_cache_reason(build, toolchain)
    _write_cache(build, toolchain, CMAKE_CACHEFILE_DIR=str(tmp_path / "old-build"))
    assert "old-build" in bd.stale_cache_reason(build, toolchain)
    _write_cache(build, toolchain, CMAKE_GENERATOR="Unix Makefiles")
    assert "Unix Makefiles" in bd.stale_cache_reason(build, toolchain)


def test_the_build_tree_is_keyed_by_compiler_and_python_not_by_where_pip_put_cmake(env, tmp_path):
    source, toolchain, build = env
    assert build.parent == source / "build"
    assert build.name[:-12] == "cmake-cpython-311-"
    assert len(build.name) == len("cmake-cpython-311-") + 12
    same = dataclasses.replace(
        toolchain, cmake="/tmp/pip-build-env-x/cmake", make_program="/tmp/pip-build-env-x/ninja"
    )
    assert bd.build_dir(source, same) == build
    for change in (
        {"compiler": "/usr/bin/clang++"},
        {"compiler_version": "g++ 13.1.0"},
        {"python": "/other/venv/bin/python"},
        {"python_version": "3.11.9"},
        {"python_include": "/other/include"},
        {"build_type": "Debug"},
        {"ext_suffix": ".cpython-312-x86_64-linux-gnu.so"},
    ):
        assert bd.build_dir(source, dataclasses.replace(toolchain, **change)) != build, change


def test_detect_finds_the_cmake_binary_and_this_python():
    if shutil.which("cmake") is None:
        pytest.skip("no cmake on PATH")
    toolchain = bd.detect(ROOT, "Release")
    assert Path(toolchain.cmake).is_file()
    assert toolchain.python == sys.executable
    assert toolchain.source_dir == str(ROOT)


def test_a_real_cmake_configures_again_after_its_ninja_is_gone(tmp_path):
    """The issue's error on a project that builds nothing: configured with a ninja that is then
    deleted, CMake fails to configure the same tree again; with the stale cache discarded first,
    it configures."""
    cmake, ninja = shutil.which("cmake"), shutil.which("ninja")
    if cmake is None or ninja is None:
        pytest.skip("needs cmake and ninja on PATH")
    source = tmp_path / "src"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(t NONE)\n"
    )
    first_env = tmp_path / "pip-build-env-1"
    first_env.mkdir()
    shutil.copy2(ninja, first_env / "ninja")
    build = tmp_path / "build"

    def configure(make_program: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [
                cmake,
                "-S",
                str(source),
                "-B",
                str(build),
                "-GNinja",
                f"-DCMAKE_MAKE_PROGRAM={make_program}",
            ],
            capture_output=True,
            text=True,
            check=False,
        )

    assert configure(str(first_env / "ninja")).returncode == 0
    shutil.rmtree(first_env)
    toolchain = bd.Toolchain(
        source_dir=str(source),
        cmake=bd._cmake_binary(cmake),
        generator="Ninja",
        make_program=ninja,
        compiler=None,
        compiler_version="",
        python=sys.executable,
        python_version=sys.version,
        python_include="",
        ext_suffix="",
        build_type="Release",
    )
    # What the old setup.py did: configure the old tree as it was. (cmake_example's remedy, the
    # make program passed on every configure, mends this entry; setup.py does that too, and the
    # check covers the compiler, cmake and every other tool the cache names.)
    failed = subprocess.run(
        [cmake, "-S", str(source), "-B", str(build)], capture_output=True, text=True, check=False
    )
    assert failed.returncode != 0
    assert "pip-build-env-1" in failed.stderr + failed.stdout
    assert "no longer exists" in bd.discard_stale_cache(build, toolchain)
    configured = configure(ninja)
    assert configured.returncode == 0, configured.stderr
    assert bd.stale_cache_reason(build, toolchain) is None


def test_ninja_is_found_on_path_when_its_package_does_not_know_where_it_is(monkeypatch, tmp_path):
    """In pip's isolated environment the ninja package's BIN_DIR is empty while its binary is on
    PATH: the cache must get an absolute path (checked next time), not a bare `ninja`."""
    fake = type(sys)("ninja")
    fake.BIN_DIR = ""
    monkeypatch.setitem(sys.modules, "ninja", fake)
    binary = _tool(tmp_path / "overlay" / "bin" / "ninja")
    monkeypatch.setenv("PATH", str(tmp_path / "overlay" / "bin"))
    assert bd._ninja() == binary
    fake.BIN_DIR = str(tmp_path / "gone")
    assert bd._ninja() == binary
