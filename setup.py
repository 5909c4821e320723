"""Builds pyfxprof._C with CMake + ninja (in the style of pybind11's cmake_example)."""

import os
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    """An extension whose sources are built by the CMake project at `source_dir`."""

    def __init__(self, name: str, source_dir: Path = ROOT) -> None:
        super().__init__(name, sources=[])
        self.source_dir = str(source_dir)


class CMakeBuild(build_ext):
    """Configures and builds the CMake project, placing the module where setuptools expects it."""

    def build_extension(self, ext: CMakeExtension) -> None:
        import pybind11

        output_dir = Path(self.get_ext_fullpath(ext.name)).resolve().parent
        build_type = os.environ.get("PYFXPROF_BUILD_TYPE", "Release")
        build_dir = Path(self.build_temp) / ext.name
        build_dir.mkdir(parents=True, exist_ok=True)
        configure = [
            "cmake", "-S", ext.source_dir, "-B", str(build_dir), "-G", "Ninja",
            f"-DCMAKE_BUILD_TYPE={build_type}",
            f"-DCMAKE_LIBRARY_OUTPUT_DIRECTORY={output_dir}",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
            "-DPYFXPROF_BUILD_PYTHON=ON",
            "-DPYFXPROF_BUILD_TESTS=OFF",
        ]
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_C"], check=True)


setup(
    ext_modules=[CMakeExtension("pyfxprof._C")],
    cmdclass={"build_ext": CMakeBuild},
)
