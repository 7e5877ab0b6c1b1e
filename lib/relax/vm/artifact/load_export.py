"""Loading a .vmx: the checked executable, with the kernels that run on this host imported.

    exe = relax.vm.load("model.vmx")      # relax.vm.artifact.vmx registers load_artifact for the magic

Everything is checked before anything runs: the container (vmx.read) and, when trusted
keys are given, its signature (signing.py), then the embedded .vmo (its reader and the
verifier) and every embedded .ko (its reader; the kernel loader refuses ABI versions it
does not speak) against the manifest's record of its targets, then every kernel call of the bytecode against the kernels that
define it (kernel_calls.py, as relaxld does). Kernel objects are then imported in link order,
skipping those with nothing that runs here, until every kernel symbol of the
manifest is provided. An artifact with no kernels for this host says which targets
it has and what the host is. Embedded files are named `model.vmx(mlp.ko)` in
messages, as ld names archive members.
"""

from __future__ import annotations

import os

from ...diagnostics import UserError
from . import signing, vmx
from ..bytecode.executable import Executable
from .kernel_calls import refuse_mismatched_calls


def member_name(source: str, entry: dict, kind: str, index: int) -> str:
    return f"{source}({entry['name'] or f'{kind}{index}'})"


def _runs_here(kernel_object) -> bool:
    from ...runtime.kernels.host import host, runs_natively, same_platform

    info = host()
    for index, target in enumerate(kernel_object.targets):
        if index in kernel_object.objects and runs_natively(target.triple, target.cpu, target.features, info):
            return True
        if index in kernel_object.bitcode and same_platform(target.triple, info.triple):
            return True
    return False


def _no_kernels_here(source: str, kernel_objects, missing: set[str]) -> UserError:
    from ...runtime.kernels.host import host

    info = host()
    targets = ", ".join(dict.fromkeys(t.describe() for ko in kernel_objects for t in ko.targets)) or "none"
    if any(_runs_here(kernel_object) for kernel_object in kernel_objects):
        names = ", ".join(f"'{name}'" for name in sorted(missing)[:5]) + (", ..." if len(missing) > 5 else "")
        what = f"no version of kernel{'s' if len(missing) > 1 else ''} {names} that runs"
    else:
        what = "no kernels that run"
    return UserError(f"'{source}' has {what} on this host ({info.triple}, cpu {info.cpu}); its targets: {targets}")


def read_kernel_objects(artifact: vmx.Artifact, source: str) -> list:
    """The embedded .ko files, decoded and checked."""
    from ...runtime.kernels import container

    entries = artifact.info.inputs[1:]
    return [container.read(data, member_name(source, entry, "ko", index))
            for index, (entry, data) in enumerate(zip(entries, artifact.kernel_objects))]


def import_host_kernels(exe: Executable, artifact: vmx.Artifact, kernel_objects: list, source: str) -> None:
    """Imports, in link order, the kernel objects that run here until every kernel symbol is provided."""
    from ...runtime.kernels.library import load_kernel_library

    from ...runtime.cuda.module import is_cuda_object

    needed = set(artifact.info.symbols_resolved_as("kernel"))
    # GPU kernels load when a VM is made on a cuda device (vm/machine/cuda_device.py), not here.
    device = [(member_name(source, artifact.info.inputs[index + 1], "ko", index), kernel_object)
              for index, kernel_object in enumerate(kernel_objects) if is_cuda_object(kernel_object)]
    if device:
        exe.device_kernel_objects = device
        needed -= {kernel.name for _, kernel_object in device for kernel in kernel_object.kernels}
    for index, kernel_object in enumerate(kernel_objects):
        provides = {kernel.name for kernel in kernel_object.kernels} & needed
        if not provides or not _runs_here(kernel_object):
            continue
        name = member_name(source, artifact.info.inputs[index + 1], "ko", index)
        exe.import_module(load_kernel_library(kernel_object, name))
        needed -= provides
    if needed:
        raise _no_kernels_here(source, kernel_objects, needed)


def load_artifact(data: bytes, source: str = "<bytes>", import_kernels: bool = True, trust=None) -> Executable:
    """The Executable of a .vmx; with `import_kernels`, ready to run on this host. With `trust`
    (signing.trusted_keys takes it), the signature is checked before any bytecode or kernel is read."""
    artifact = vmx.read(data, source, signing.trusted_keys(trust) if trust is not None else None)
    exe = Executable.load_from_bytes(artifact.bytecode, member_name(source, artifact.info.inputs[0], "vmo", 0))
    kernel_objects = read_kernel_objects(artifact, source)
    vmx.check_targets(artifact.info, kernel_objects, source)
    if import_kernels:  # to run it: its calls must fit its kernels (relaxas --dump shows any artifact)
        refuse_mismatched_calls(exe, artifact, kernel_objects, source)
        import_host_kernels(exe, artifact, kernel_objects, source)
    exe.link_info = artifact.info
    exe.signature = artifact.signature
    exe.kernel_objects = list(artifact.kernel_objects)
    return exe


def export_artifact(exe: Executable, path: str) -> None:
    """`exe.export("m.vmx")`: links the executable with its kernel objects (relax.build attaches them).

    Names the bytecode calls that nothing defines are left to be registered at run
    time (as TVM's export does), unless the executable came from a .vmx, whose link
    flags are kept.
    """
    from .linker import LinkInput, link

    stem = os.path.splitext(os.path.basename(path))[0]
    info = exe.link_info
    kernel_data = list(exe.kernel_objects)
    exec_mode = None
    if info is not None:
        names = [entry["name"] for entry in info.inputs]
        allow_undefined = tuple(info.flags.get("allow_undefined", ()))
        exec_mode = info.flags.get("exec_mode")
    else:
        roles = exe.kernel_object_roles  # a cuda build: ["cuda", "host"], as relaxc names them
        if roles and len(roles) == len(kernel_data):
            names = [f"{stem}.vmo"] + [f"{stem}.{role}.ko" if role else f"{stem}.ko" for role in roles]
        else:
            names = [f"{stem}.vmo"] + [f"{stem}.ko" if len(kernel_data) == 1 else f"{stem}.{i}.ko"
                                       for i in range(len(kernel_data))]
        allow_undefined = ("*",)
    result = link(LinkInput(names[0], exe.save_to_bytes()),
                  [LinkInput(name, data) for name, data in zip(names[1:], kernel_data)],
                  allow_undefined=allow_undefined, exec_mode=exec_mode)
    with open(path, "wb") as handle:
        handle.write(result.data)
