"""setuptools drives vkconv's own CMake build for the extension vkconv._vkconv (python/CMakeLists.txt), then
installs it beside the package's Python files (python/vkconv). Everything else is in pyproject.toml.

VKCONV_CMAKE_BUILD_DIR names a CMake build folder to build in (an existing one is reused as configured, so
an installation from a developer's build folder compiles nothing new); without it the build runs in
setuptools' temporary folder. VKCONV_CMAKE_ARGS adds configure options (space-separated)."""

import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("VKCONV_CMAKE_BUILD_DIR") or os.path.join(os.path.abspath(self.build_temp), "cmake")
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            configure = ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                         "-DVKCONV_BUILD_TESTS=OFF", "-DVKCONV_BUILD_SAMPLES=OFF", "-DVKCONV_BUILD_PYTHON=ON",
                         f"-DPython3_EXECUTABLE={sys.executable}"]
            configure += os.environ.get("VKCONV_CMAKE_ARGS", "").split()
            subprocess.check_call(configure)
        jobs = str(os.cpu_count() or 1)
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "vkconv_python", "-j", jobs])
        package_dir = os.path.join(build_dir, "python", "vkconv")
        built = [f for f in os.listdir(package_dir) if f.startswith("_vkconv") and f.endswith((".so", ".pyd"))]
        if len(built) != 1:
            raise RuntimeError(f"vkconv: expected one _vkconv extension in {package_dir}, found {built}")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(package_dir, built[0]), target)


# setuptools' own build folder is build-python/, apart from CMake's usual build/.
setup(ext_modules=[CMakeExtension("vkconv._vkconv")], cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": "build-python"}})
