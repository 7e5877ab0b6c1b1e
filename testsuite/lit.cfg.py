# lit configuration for the text tests: `# RUN:` lines piped into FileCheck.
import os
import shutil

import lit.formats

config.name = "relax"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".relax", ".test"]
config.excludes = ["Inputs", "Output", "__pycache__", "lit.cfg.py", "conftest.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")

repo_root = os.path.dirname(config.test_source_root)
config.environment["PATH"] = os.pathsep.join(
    [os.path.join(repo_root, ".venv", "bin"), os.environ.get("PATH", "")]
)
for name in ("HOME", "TMPDIR", "LANG", "LC_ALL"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
config.environment["PYTHONHASHSEED"] = "0"
# A kernel cache of this run's own, empty when it starts: the RUN lines that build the
# same samples again (staged and one-shot, several emits) build each kernel object once,
# and the user's cache is never read or filled.
kernel_cache = os.path.join(config.test_exec_root, "kernel-cache")
shutil.rmtree(kernel_cache, ignore_errors=True)
os.makedirs(kernel_cache, exist_ok=True)
config.environment["RELAX_CACHE_DIR"] = kernel_cache
config.environment["COLUMNS"] = "200"

config.substitutions.append(("%samples", os.path.join(repo_root, "samples")))
config.substitutions.append(("%bench", os.path.join(repo_root, "..", "shared", "bench")))
# The python `filecheck` package installs `filecheck`; LLVM spells it FileCheck.
if shutil.which("FileCheck") is None:
    config.substitutions.append(("FileCheck", "filecheck"))
