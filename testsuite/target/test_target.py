"""Target parsing: every spelling, tags, JSON, host detection and the errors."""

import json

import pytest
from hypothesis import given, settings, strategies as st

from relax.diagnostics import UserError
from relax.target import Target, list_targets_text, parse_target
from relax.target import llvm_info
from relax.target.tags import TAGS


def test_plain_llvm_is_the_host_triple_with_a_generic_cpu():
    target = Target.parse("llvm")
    assert target.kind == "llvm"
    assert target.mtriple == llvm_info.host_triple()
    assert target.mcpu == "" and target.mattr == ()
    assert target.opt_level == 3 and target.keys == ("cpu",)
    assert str(target) == f"llvm -keys=cpu -mtriple={llvm_info.host_triple()}"


def test_cross_triple_cpu_and_features():
    target = Target.parse("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v1 -mattr=+sve")
    assert (target.mtriple, target.mcpu, target.mattr) == ("aarch64-linux-gnu", "neoverse-v1", ("+sve",))
    assert str(target) == "llvm -keys=arm_cpu,cpu -mattr=+sve -mcpu=neoverse-v1 -mtriple=aarch64-linux-gnu"
    assert target.keys == ("arm_cpu", "cpu")
    assert target.features == "+sve"


@pytest.mark.parametrize("text, triple, cpu", [
    ("llvm -mtriple=riscv64-linux-gnu", "riscv64-linux-gnu", ""),
    ("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512", "x86_64-linux-gnu", "skylake-avx512"),
    ("llvm   -mcpu=skylake-avx512   -mtriple=x86_64-linux-gnu", "x86_64-linux-gnu", "skylake-avx512"),
])
def test_classic_strings(text, triple, cpu):
    target = Target.parse(text)
    assert (target.mtriple, target.mcpu) == (triple, cpu)


def test_native_resolves_to_the_host_cpu_and_features():
    target = Target.parse("llvm -mcpu=native")
    assert target.mcpu == llvm_info.host_cpu()
    assert target.mattr == llvm_info.host_features()
    assert target == Target.parse("llvm -mcpu=native")


def test_host_detection_matches_llvmlite():
    host = Target.host()
    assert host.mtriple == llvm_info.host_triple() and host.mcpu == llvm_info.host_cpu()
    assert host.tag == "host"
    assert Target.parse("host").mcpu == host.mcpu


def test_options_typed_and_both_spellings():
    target = Target.parse("llvm -num_cores=8 -opt-level=2 -fast-math")
    assert (target.num_cores, target.opt_level, target.fast_math) == (8, 2, True)
    assert "-num-cores=8" in str(target) and "-opt-level=2" in str(target)


def test_every_spelling_gives_the_same_normalized_target():
    text = Target.parse("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell -mattr=+avx2,+fma")
    from_json = Target.parse(json.dumps(
        {"kind": "llvm", "mtriple": "x86_64-linux-gnu", "mcpu": "haswell", "mattr": ["+avx2", "+fma"]}))
    from_dict = parse_target({"kind": "llvm", "mtriple": "x86_64-linux-gnu", "mcpu": "haswell",
                              "mattr": "+avx2,+fma"})
    assert text == from_json == from_dict
    assert Target.parse(str(text)) == text
    assert Target.parse(json.dumps(text.to_json())) == text


def test_cuda_with_arch_and_default_host():
    target = Target.parse("cuda -arch=sm_90")
    assert target.kind == "cuda" and target.arch == "sm_90" and target.is_gpu
    assert target.max_threads_per_block == 1024 and target.thread_warp_size == 32
    assert target.host_target is not None and target.host_target.kind == "llvm"
    assert str(target) == "cuda -keys=cuda,gpu -arch=sm_90"


def test_cuda_with_explicit_host():
    target = Target.parse("cuda -arch=sm_80", host="llvm -mtriple=aarch64-linux-gnu")
    assert target.host_target.mtriple == "aarch64-linux-gnu"
    assert target.to_json()["host"]["mtriple"] == "aarch64-linux-gnu"
    with pytest.raises(UserError, match="takes no separate host"):
        Target.parse("llvm", host="llvm")


@pytest.mark.parametrize("tag", sorted(TAGS))
def test_every_tag_expands_and_round_trips(tag):
    target = Target.parse(tag)
    assert target.tag == tag
    assert target.kind == TAGS[tag]["kind"]
    assert Target.parse(json.dumps(target.to_json())) == target


def test_tags_from_the_brief():
    assert Target.parse("aws/graviton3").mcpu == "neoverse-v1"
    assert Target.parse("raspberry-pi/4b-aarch64").mcpu == "cortex-a72"
    assert Target.parse("nvidia/h100").arch == "sm_90"
    assert Target.parse("nvidia/h200").arch == "sm_90"
    assert Target.parse("nvidia/a100").arch == "sm_80"
    orin = Target.parse("nvidia/jetson-orin")
    assert orin.arch == "sm_87" and orin.host_target.mtriple == "aarch64-linux-gnu"


def test_tag_with_overrides():
    assert Target.parse("aws/graviton3 -num-cores=8").num_cores == 8


@pytest.mark.parametrize("text, pattern", [
    ("tpu", r"unknown target kind 'tpu'; valid kinds: llvm, cuda"),
    ("llvm -mtriple=foo-bar-baz", r"unknown target triple 'foo-bar-baz'.*x86_64.*aarch64"),
    ("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v9", r"unknown CPU 'neoverse-v9'.*neoverse-v1.*valid values: .*cortex-a72"),
    ("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx1024", r"unknown CPU.*valid values:.*haswell"),
    ("llvm -mtriple=aarch64-linux-gnu -mattr=+svee", r"unknown feature '\+svee'.*did you mean \+sve.*valid features"),
    ("llvm -mattr=avx2", r"must start with '\+' or '-'"),
    ("llvm -frobnicate=1", r"unknown option 'frobnicate'.*valid options: .*mtriple"),
    ("llvm -num-cores=many", r"takes a int value"),
    ("llvm -opt-level=7", r"opt-level must be"),
    ("cuda -arch=sm_99", r"unknown CUDA architecture 'sm_99'.*valid values:.*sm_90"),
    ("aws/graviton9", r"unknown target tag 'aws/graviton9'.*valid tags: host, aws/graviton2"),
    ("llvm mcpu", r"must look like -name=value"),
    ('{"kind": "llvm", "mcpu": }', r"not valid JSON"),
    ('{"mcpu": "x"}', r"needs a 'kind'"),
    ("", r"empty target"),
])
def test_errors_list_the_valid_values(text, pattern):
    with pytest.raises(UserError, match=pattern):
        Target.parse(text)


def test_native_on_a_foreign_triple_is_an_error():
    foreign = "aarch64-linux-gnu" if not llvm_info.host_triple().startswith("aarch64") else "x86_64-linux-gnu"
    with pytest.raises(UserError, match="-mcpu=native"):
        Target.parse(f"llvm -mtriple={foreign} -mcpu=native")


def test_list_targets_text_reads_the_tables():
    text = list_targets_text()
    for tag in TAGS:
        assert tag in text
    assert "-mtriple" in text and "-arch" in text
    for arch in ("x86_64", "aarch64", "riscv64", "nvptx64"):
        assert arch in text


def test_targets_are_hashable_values():
    assert len({Target.parse("cuda -arch=sm_90"), Target.parse("nvidia/h100")}) == 2
    assert hash(Target.parse("llvm")) == hash(Target.parse("llvm"))


def test_explicit_keys_win_over_the_arm_default():
    assert Target.parse("llvm -mtriple=aarch64-linux-gnu -keys=cpu").keys == ("cpu",)
    assert Target.parse("llvm -mtriple=x86_64-linux-gnu").keys == ("cpu",)


@pytest.mark.parametrize("triple", ["aarch64-linux-gnu", "x86_64-linux-gnu", "riscv64-linux-gnu"])
@given(data=st.data())
@settings(max_examples=15, deadline=None)
def test_every_listed_cpu_and_feature_is_accepted(triple, data):
    tables = llvm_info.processor_tables(triple)
    assert tables["cpus"] and tables["features"]
    cpu = data.draw(st.sampled_from(tables["cpus"]))
    features = data.draw(st.lists(st.sampled_from(tables["features"]), max_size=3, unique=True))
    signs = data.draw(st.lists(st.sampled_from("+-"), min_size=len(features), max_size=len(features)))
    attrs = [sign + name for sign, name in zip(signs, features)]
    text = f"llvm -mtriple={triple} -mcpu={cpu}" + (f" -mattr={','.join(attrs)}" if attrs else "")
    target = Target.parse(text)
    assert (target.mcpu, target.mattr) == (cpu, tuple(attrs))
    assert Target.parse(str(target)) == target
