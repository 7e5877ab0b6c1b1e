"""An aarch64 sysroot in which the project's runtime runs under qemu-user, cached under build/.

    <cache>/sysroot/        Debian arm64 packages of Python and the libraries it needs, unpacked
    <cache>/site-packages/  aarch64 wheels of the runtime's requirements, the venv's versions
    <cache>/stamp.json      the cache key of the last complete build (a second run downloads nothing)

The arm64 packages are only downloaded and unpacked (dpkg -x), never installed: a multiarch
install of python3.X:arm64 would replace the host's python3.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import zipfile
from importlib import metadata
from pathlib import Path

from cross_util import CommandFailed, Unavailable, is_root, log, run

ARCH = "arm64"
PROJECT = "relax-toolchain"
LAYOUT = 1  # bump when what the cache holds changes

# Besides Python and what it depends on: libstdc++ and libgcc_s, which the manylinux wheels of
# numpy and llvmlite take from the system.
EXTRA_PACKAGES = ("libstdc++6", "libgcc-s1")
APT_DEPENDS = ["apt-cache", "depends", "--no-recommends", "--no-suggests", "--no-conflicts",
               "--no-breaks", "--no-replaces", "--no-enhances"]
_DEPENDS = re.compile(r"(\|?)(?:Pre)?Depends: (\S+)")


def python_version() -> str:
    """The Python of the guest: the same minor version as the one running this (the venv's)."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def ensure_sysroot(cache: Path, refresh: bool = False) -> tuple[Path, Path]:
    """(sysroot, site-packages), built unless the stamp says they are complete and current."""
    sysroot, site = cache / "sysroot", cache / "site-packages"
    key = cache_key()
    stamp = cache / "stamp.json"
    if not refresh and stamp.is_file() and json.loads(stamp.read_text()) == key:
        log(f"sysroot: cached ({cache})")
        return sysroot, site
    if cache.exists():
        shutil.rmtree(cache)
    debs, wheels = cache / "debs", cache / "wheels"
    for folder in (debs, wheels, sysroot, site):
        folder.mkdir(parents=True)
    packages = debian_packages(debs)
    for deb in packages:
        run(["dpkg", "-x", str(deb), str(sysroot)])
    relativize_symlinks(sysroot)
    log(f"sysroot: {len(packages)} Debian {ARCH} packages unpacked")
    wheel_files = download_wheels(key["wheels"], manylinux_platforms(glibc_version(packages)), wheels)
    for wheel in wheel_files:
        unpack_wheel(wheel, site)
    pins = ", ".join(f"{name}=={version}" for name, version in key["wheels"].items())
    log(f"sysroot: {len(wheel_files)} aarch64 wheels unpacked ({pins})")
    precompile(sysroot / "usr" / "lib" / f"python{python_version()}", site)
    for folder in (debs, wheels):   # unpacked: a changed key downloads everything anew anyway
        shutil.rmtree(folder)
    stamp.write_text(json.dumps(key, indent=1) + "\n")
    return sysroot, site


def root_packages() -> list[str]:
    return [f"python{python_version()}", *EXTRA_PACKAGES]


def cache_key() -> dict:
    return {"layout": LAYOUT, "release": debian_release(), "python": python_version(),
            "packages": root_packages(), "wheels": runtime_pins()}


def debian_release() -> str:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        raise Unavailable("no /etc/os-release: not a Debian system") from None
    fields = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    return fields.get("VERSION_CODENAME", "").strip('"') or fields.get("VERSION_ID", "?").strip('"')


# Debian packages -------------------------------------------------------------------------------


def debian_packages(folder: Path) -> list[Path]:
    """Downloads the arm64 packages of Python, its dependencies and EXTRA_PACKAGES into `folder`."""
    for tool in ("apt-get", "apt-cache", "dpkg"):
        if not shutil.which(tool):
            raise Unavailable(f"no {tool}: the {ARCH} sysroot is made of Debian packages")
    enable_architecture()
    names = resolve_packages([f"{name}:{ARCH}" for name in root_packages()])
    command = ["apt-get", "download"] + (["-o", "APT::Sandbox::User=root"] if is_root() else [])
    try:
        run(command + names, cwd=str(folder))
    except CommandFailed as failure:
        raise Unavailable(f"apt-get download of the {ARCH} packages failed: {failure}") from None
    return sorted(folder.glob("*.deb"))


def enable_architecture() -> None:
    """Makes apt list the arm64 packages, up to date: as root, dpkg --add-architecture and apt-get
    update; otherwise the lists must be there already."""
    python = f"python{python_version()}"
    if is_root():
        log(f"sysroot: dpkg --add-architecture {ARCH}; apt-get update")
        try:
            if ARCH not in run(["dpkg", "--print-foreign-architectures"]).split():
                run(["dpkg", "--add-architecture", ARCH])
            run(["apt-get", "update"])
        except CommandFailed as failure:
            raise Unavailable(f"apt cannot list the {ARCH} packages: {failure}") from None
    if not _has_candidate(python):
        how = "" if is_root() else f" (as root: dpkg --add-architecture {ARCH}; apt-get update)"
        raise Unavailable(f"apt lists no {python}:{ARCH}{how}")


def _has_candidate(package: str) -> bool:
    output = run(["apt-cache", "policy", f"{package}:{ARCH}"])
    return "Candidate:" in output and "Candidate: (none)" not in output


def resolve_packages(roots: list[str]) -> list[str]:
    """The roots and every arm64 package they depend on (Depends, Pre-Depends), transitively."""
    seen, todo = set(roots), list(roots)
    while todo:
        batch, todo = todo, []
        for package, dependencies in parse_depends(run(APT_DEPENDS + batch)).items():
            for name in dependencies:
                if name not in seen:
                    seen.add(name)
                    todo.append(name)
    return sorted(seen)


def parse_depends(text: str, arch: str = ARCH) -> dict[str, list[str]]:
    """`apt-cache depends` output -> {package: its dependencies}, keeping arch-specific ones only.

    Of alternatives ('|Depends: a' then 'Depends: b') the first that exists is taken; a virtual
    name ('<x:arm64>') stands for the first provider listed under it. A dependency on a package
    of architecture 'all' (media-types, readline-common ...: data, not libraries) is left out:
    apt names those without ':arm64'.
    """
    result: dict[str, list[list]] = {}
    groups: list[list] = []     # the current package's groups of alternatives: [(name, [providers])]
    group_open = False          # the last group goes on ('|' before its last alternative)
    in_depends = False          # the last relation line was a dependency (provider lines follow it)
    for line in text.splitlines():
        if not line.startswith(" "):
            groups = result.setdefault(line.strip(), [])
            group_open = in_depends = False
        elif line.startswith("    "):
            if in_depends:
                groups[-1][-1][1].append(line.strip())
        elif match := _DEPENDS.match(line.strip()):
            if not group_open:
                groups.append([])
            groups[-1].append((match.group(2), []))
            group_open, in_depends = bool(match.group(1)), True
        else:
            group_open = in_depends = False
    return {package: [name for name in map(_choose, groups, [arch] * len(groups)) if name]
            for package, groups in result.items()}


def _choose(group: list, arch: str) -> str | None:
    """The package that satisfies a group of alternatives, if it is one of `arch`."""
    for name, providers in group:
        if name.startswith("<"):
            if not providers:
                continue    # a virtual name nothing provides: the next alternative
            name = providers[0]
        return name if name.endswith(f":{arch}") else None
    return None


def relativize_symlinks(root: Path) -> None:
    """Rewrites the absolute symlinks under `root` relative to it.

    The host's kernel follows symlinks, and follows an absolute one to the host's own file
    (an x86 library, the host's /etc/python3.X/sitecustomize.py), not the sysroot's.
    """
    for path in root.rglob("*"):
        if path.is_symlink() and os.readlink(path).startswith("/"):
            target = root / os.readlink(path).lstrip("/")
            path.unlink()
            path.symlink_to(os.path.relpath(target, path.parent))


def glibc_version(debs: list[Path]) -> tuple[int, int]:
    """The C library's version, from the libc6 package's file name (libc6_2.36-9+deb12u14_arm64.deb)."""
    for deb in debs:
        match = re.match(r"libc6_(?:\d+%3a)?(\d+)\.(\d+)", deb.name)
        if match:
            return int(match.group(1)), int(match.group(2))
    raise Unavailable("no libc6 package among the downloaded ones")


def manylinux_platforms(glibc: tuple[int, int]) -> list[str]:
    """Every manylinux platform tag this C library runs: pip does not widen an explicit --platform."""
    major, minor = glibc
    return ["manylinux2014_aarch64"] + [f"manylinux_{major}_{m}_aarch64" for m in range(17, minor + 1)]


# Wheels ----------------------------------------------------------------------------------------


def runtime_pins(project: str = PROJECT) -> dict[str, str]:
    """The project's run-time requirements (no extras) and theirs, transitively: name -> the version
    installed here. A requirement that is not installed here was left out by its marker (another
    OS, an older Python), which holds for an aarch64 Linux guest with the same Python too."""
    try:
        metadata.distribution(project)
    except metadata.PackageNotFoundError:
        raise SystemExit(f"cross-check: {project} is not installed in {sys.executable}: run it with the "
                         f"venv's Python (make cross-check)") from None
    pins: dict[str, str] = {}
    todo = [project]
    while todo:
        for requirement in metadata.distribution(todo.pop()).requires or ():
            spec, _, marker = requirement.partition(";")
            if "extra" in marker:
                continue
            name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", spec.strip()).group(0)
            key = re.sub(r"[-_.]+", "-", name).lower()
            if key in pins:
                continue
            try:
                pins[key] = metadata.version(name)
            except metadata.PackageNotFoundError:
                continue
            todo.append(name)
    return dict(sorted(pins.items()))


def download_wheels(pins: dict[str, str], platforms: list[str], folder: Path) -> list[Path]:
    """pip downloads the aarch64 wheels of exactly `pins` (their dependencies are among them)."""
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
               "--dest", str(folder), "--python-version", python_version(), "--implementation", "cp",
               "--abi", f"cp{python_version().replace('.', '')}"]
    for platform in platforms:
        command += ["--platform", platform]
    try:
        run(command + [f"{name}=={version}" for name, version in pins.items()])
    except CommandFailed as failure:
        raise Unavailable(f"pip could not download the aarch64 wheels: {failure}") from None
    return sorted(folder.glob("*.whl"))


def unpack_wheel(wheel: Path, site: Path) -> None:
    """Installs a wheel the simple way: unzip it; its .data/purelib and platlib go to `site` too
    (scripts, headers and data are not needed to import it)."""
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            parts = member.filename.split("/")
            if parts[0].endswith(".data"):
                if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
                    continue
                member.filename = "/".join(parts[2:])
            archive.extract(member, site)


def precompile(*folders: Path) -> None:
    """Bytecode for the guest's Python files, written by the host's Python of the same minor version
    (same magic number): the emulated interpreter would otherwise compile them all on its first run."""
    try:
        run([sys.executable, "-m", "compileall", "-q", "-j", "0", *map(str, folders)])
    except CommandFailed as failure:
        # A file the compiler refuses stays as it is; the guest never imports it or compiles it then.
        log(f"sysroot: some files did not compile (left as they are): {failure}")
