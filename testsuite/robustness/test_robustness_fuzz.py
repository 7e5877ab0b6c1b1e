"""The robustness fuzzer (fuzz_robustness.py) on a short, fixed budget, and its own parts.

`make fuzz SECONDS=N` runs it for longer; here one fixed seed over a few dozen cases
of two small samples must find nothing: no exit 70, no traceback, no signal, no hang.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys

import numpy as np
from fuzz_cases import CATEGORIES
from fuzz_corpus import REPO
from mutate_artifact import mutate_artifact
from mutate_bytes import Container, build_vmo, reseal, vmo_sections
from mutate_input import mutate_inputs
from mutate_source import SOURCE_MUTATORS, mutate_source

FUZZER = REPO / "testsuite" / "robustness" / "fuzz_robustness.py"
SEED, CASES, SAMPLES = 10, 36, "control_flow,tuples"
KO_MAGIC = b"\x7fRLXKO\r\n"

SOURCE = '''@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        y: R.Tensor((2, 3), dtype="float32") = R.add(x, R.const(1.5, "float32"))
        return y
'''


def _container() -> bytes:
    manifest = json.dumps({"code": [{"sha256": "0" * 64, "size": 5}], "format": "x"}).encode()
    return Container(KO_MAGIC, 0, 4, [[1, 0, manifest], [2, 0, b"\x7fELF\x02\x01" + bytes(58)], [3, 0, b"BC"]]).build()


def test_no_finding_on_a_fixed_seed(tmp_path):
    """Fails on any finding: each is named with its reproducer (--seed, --case) in the output."""
    command = [sys.executable, str(FUZZER), "--seed", str(SEED), "--cases", str(CASES), "--samples", SAMPLES,
               "--work", str(tmp_path / "work"), "--findings", str(tmp_path / "findings"), "--no-confirm",
               "--reduce-seconds", "0", "--timeout", "30"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    assert f"{CASES} cases" in result.stdout
    assert all(f"\n{category} " in result.stdout for category in CATEGORIES)


def test_container_model_round_trips():
    data = _container()
    assert Container.parse(data).build() == data
    assert reseal(data, "ko") == data
    assert reseal(data[:-1], "ko") != data[:-1]


def test_vmo_model_round_trips():
    header = (0xD225DE2F4214151E).to_bytes(8, "little") + (3).to_bytes(8, "little") + b"0.1"
    data = build_vmo(header, [b"a", b"", b"ccc", b"dd"])
    assert vmo_sections(data) == (header, [b"a", b"", b"ccc", b"dd"])
    assert reseal(data, "vmo") == data


def test_mutations_depend_on_the_seed_only():
    arrays = {"x": np.ones((2, 3), np.float32), "n": np.array(3, np.int32)}
    for seed in range(20):
        once = [mutate_source(SOURCE, random.Random(seed), 2), mutate_inputs(arrays, random.Random(seed)),
                mutate_artifact("ko", _container(), random.Random(seed), {"ko": [_container()]})]
        again = [mutate_source(SOURCE, random.Random(seed), 2), mutate_inputs(arrays, random.Random(seed)),
                 mutate_artifact("ko", _container(), random.Random(seed), {"ko": [_container()]})]
        assert repr(once) == repr(again)


def test_every_source_mutator_changes_the_sample():
    for name, mutator in SOURCE_MUTATORS.items():
        result = mutator(SOURCE, random.Random(0))
        assert result is not None and result[0] != SOURCE, name


def test_tampering_with_code_keeps_the_code_hashes_stale():
    """A symbol moved within its section, with the hashes recomputed, passed every structural
    check and relaxrun died by SIGILL (issue 16): only the hashes or a signature can tell such
    an object from a compiler's, so the ELF mutator leaves them stale for those, and
    recomputes them for the mutations the structural checks must refuse."""
    import hashlib

    from elf_objects import compiled_object
    from mutate_artifact import elf

    code = compiled_object("x86_64-linux-gnu")
    manifest = {"code": [{"kind": "object", "sha256": hashlib.sha256(code).hexdigest(), "target": 0}],
                "kernels": [{"symbol": "relaxk_k"}]}
    ko = Container(KO_MAGIC, 0, 4, [[1, 0, json.dumps(manifest).encode()], [2, 0, code]]).build()
    labels = {}
    for seed in range(300):
        mutated, label = elf("ko", ko, random.Random(seed), {})
        document, native = [section[2] for section in Container.parse(mutated).sections]
        if native != code:
            stale = json.loads(document)["code"][0]["sha256"] != hashlib.sha256(native).hexdigest()
            assert stale == label.endswith("+stale-code-hashes"), label
            labels.setdefault(label.split(":")[1], set()).add(stale)
    assert labels["st_value+stale-code-hashes"] == {True} and labels["st_value"] == {False}  # in range or not
    assert labels["r_type+stale-code-hashes"] == {True} and "r_type" not in labels
    assert labels["e_machine"] == {False}


def test_a_number_mutation_keeps_a_literal_past_pythons_digit_limit_as_text():
    # A literal grown to 5000 digits by earlier mutations stopped a 30-minute run (seed 20261131):
    # int() refuses more than 4300 digits.
    from mutate_source import perturb_number

    text = "x = " + "9" * 5000 + "\n"
    for seed in range(20):
        mutated, _ = perturb_number(text, random.Random(seed))  # no ValueError
        assert mutated.startswith("x = ")
