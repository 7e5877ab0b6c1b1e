"""Mutators for TVMScript sources (.relax, and the .vms and listings the tools write).

SOURCE_MUTATORS is the table: each takes (text, rng) and returns (text, detail), or
None where the text lacks what it aims at. Token edits damage the syntax; the
number, dtype and shape mutators keep the syntax and feed edge values to the
checks behind it (literals out of their dtype's range, dims beyond int64, vector
dtypes, thousands of dims); the nesting mutators grow what the compiler and the
VM recurse on (parentheses, tuples, nested `if`, long chains of bindings).
GENERATORS write whole small modules with the inputs to run them with.
"""

from __future__ import annotations

import re

TOKEN = re.compile(r'"[^"\n]*"|\d+\.\d*(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?|[A-Za-z_][\w.]*|[^\s\w]')
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d*)?(?:[eE][+-]?\d+)?(?![\w.])")
DTYPE = re.compile(r'"(?:float|int|uint|bfloat|bool|handle|void)\w*"')
SHAPE = re.compile(r"(?<=Tensor\()\([^()]*\)|(?<=Buffer\()\([^()]*\)|(?<=shape\()\[[^\[\]]*\]")
RETURN = re.compile(r"^( +)return (.+)$", re.MULTILINE)
DEF = re.compile(r"^ +def \w+\((.*)\)", re.MULTILINE)

EDGE_NUMBERS = ("0", "-1", "1", "2147483647", "2147483648", "4294967296", "9223372036854775807",
                "9223372036854775808", "18446744073709551616", "-9223372036854775809", "100000000000000000000000000",
                "1" + "0" * 400, "9" * 5000, "1e308", "1e309", "-0.0", "1e-45", "0.5", "nan", "inf", "0x10", "1_000")
DTYPES = ("float16", "float32", "float64", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "uint32", "uint64",
          "bool", "float64x4", "float32x8", "int32x4", "float8_e4m3fn", "void", "handle", "int1", "int0", "float0",
          "float128", "int65", "", "Float32", "float32 ", "int" + "9" * 30)
EDGE_DIMS = ("0", "-1", "1", "2147483648", "9223372036854775807", "9223372036854775808", "100000000000000000000000000",
             "n", "m", "T.int64(3)", "1.5", '"4"', "None")


def _tokens(text: str) -> list[re.Match]:
    return list(TOKEN.finditer(text))


def delete_token(text: str, rng):
    tokens = _tokens(text)
    if not tokens:
        return None
    token = rng.choice(tokens)
    return text[:token.start()] + text[token.end():], repr(token.group())


def duplicate_token(text: str, rng):
    tokens = _tokens(text)
    if not tokens:
        return None
    token = rng.choice(tokens)
    return text[:token.end()] + " " + token.group() + text[token.end():], repr(token.group())


def swap_tokens(text: str, rng):
    tokens = _tokens(text)
    if len(tokens) < 2:
        return None
    first = rng.randrange(len(tokens) - 1)
    second = first + 1 if rng.random() < 0.5 else rng.randrange(first + 1, len(tokens))
    a, b = tokens[first], tokens[second]
    return (text[:a.start()] + b.group() + text[a.end():b.start()] + a.group() + text[b.end():],
            f"{a.group()!r}<->{b.group()!r}")


def _replace_match(text: str, rng, pattern: re.Pattern, replacement) -> tuple[str, str] | None:
    matches = list(pattern.finditer(text))
    if not matches:
        return None
    match = rng.choice(matches)
    new = replacement(match.group())
    return text[:match.start()] + new + text[match.end():], f"{match.group()[:20]!r}->{new[:30]!r}"


def perturb_number(text: str, rng):
    def replacement(old: str) -> str:
        # Python converts at most 4300 digits; a literal grown past that by earlier mutations stays text.
        if rng.random() < 0.3 and old.isdigit() and len(old) < 4000:
            return str(rng.choice((int(old) + 1, int(old) - 1, -int(old), int(old) * (1 << 20), int(old) * 10 ** 20)))
        return rng.choice(EDGE_NUMBERS)

    return _replace_match(text, rng, NUMBER, replacement)


def swap_dtype(text: str, rng):
    return _replace_match(text, rng, DTYPE, lambda old: f'"{rng.choice(DTYPES)}"')


def change_shape(text: str, rng):
    def replacement(old: str) -> str:
        opening, closing = old[0], old[-1]
        dims = [d.strip() for d in old[1:-1].split(",") if d.strip()]
        choice = rng.randrange(5)
        if choice == 0 and dims:
            dims.pop(rng.randrange(len(dims)))
        elif choice == 1:
            dims.insert(rng.randrange(len(dims) + 1), rng.choice(("1", "0", "3", "n")))
        elif choice == 2 and dims:
            dims[rng.randrange(len(dims))] = rng.choice(EDGE_DIMS)
        elif choice == 3:
            dims = ["1"] * rng.choice((33, 64, 300, 3000))
        else:
            dims = []
        inner = ", ".join(dims) + ("," if len(dims) == 1 and opening == "(" else "")
        return opening + inner + closing

    return _replace_match(text, rng, SHAPE, replacement)


def _return_site(text: str, rng):
    """A `return VALUE` line: (indent, value, start, end), and the parameter names of the
    function it ends (scanning back to its `def`)."""
    returns = list(RETURN.finditer(text))
    if not returns:
        return None
    site = rng.choice(returns)
    definitions = [d for d in DEF.finditer(text, 0, site.start())]
    params = re.findall(r"(\w+)\s*:", definitions[-1].group(1)) if definitions else []
    return site, params


def nest(text: str, rng):
    """A binding of deeply nested parentheses, tuples or calls inserted before a return."""
    found = _return_site(text, rng)
    if found is None:
        return None
    site, params = found
    indent, value = site.group(1), rng.choice(params) if params else site.group(2)
    depth = rng.choice((20, 90, 199, 250, 1000))
    kind = rng.choice(("parens", "tuple", "calls"))
    if kind == "parens":
        expr = "(" * depth + value + ")" * depth
    elif kind == "tuple":
        expr = "(" * depth + value + ",)" * depth
    else:
        expr = "R.add(" * depth + value + f", {value})" * depth
    binding = f"{indent}fuzz_nested = {expr}\n"
    return text[:site.start()] + binding + text[site.start():], f"{kind}x{depth}"


def chain(text: str, rng):
    """A long chain of bindings, each using the one before, inserted before a return."""
    found = _return_site(text, rng)
    if found is None or not found[1]:
        return None
    site, params = found
    indent, value, length = site.group(1), rng.choice(found[1]), rng.choice((20, 100, 200))
    lines = [f"{indent}fuzz_0 = {value}\n"]
    lines += [f"{indent}fuzz_{i} = R.add(fuzz_{i - 1}, {value})\n" for i in range(1, length)]
    return text[:site.start()] + "".join(lines) + text[site.start():], f"x{length}"


def nested_if(text: str, rng):
    """The returned value passed through `depth` nested ifs (each else-branch binds it too),
    the function returning what comes out, so that no pass may drop them."""
    found = _return_site(text, rng)
    if found is None:
        return None
    site = found[0]
    indent, value, depth = site.group(1), site.group(2), rng.choice((10, 40, 81, 85, 95, 120))
    lines = [f'{indent}fuzz_cond: R.Tensor((), dtype="bool") = R.const(True, "bool")']
    for level in range(depth):
        pad = indent + "    " * level
        lines.append(f"{pad}if fuzz_cond:")
    inner = indent + "    " * depth
    lines.append(f"{inner}fuzz_{depth} = {value}")
    for level in reversed(range(depth)):
        pad = indent + "    " * level
        lines.append(f"{pad}    fuzz_{level} = fuzz_{level + 1}")
        lines.append(f"{pad}else:")
        lines.append(f"{pad}    fuzz_{level} = {value}")
    lines.append(f"{indent}return fuzz_0")
    return text[:site.start()] + "\n".join(lines) + text[site.end():], f"x{depth}"


SOURCE_MUTATORS = {
    "delete-token": delete_token,
    "duplicate-token": duplicate_token,
    "swap-tokens": swap_tokens,
    "number": perturb_number,
    "dtype": swap_dtype,
    "shape": change_shape,
    "nest": nest,
    "chain": chain,
    "nested-if": nested_if,
}


def mutate_source(text: str, rng, count: int) -> tuple[str, str]:
    """`count` mutations in a row: (text, label listing each)."""
    labels = []
    for _ in range(count):
        names = list(SOURCE_MUTATORS)
        rng.shuffle(names)
        for name in names:
            result = SOURCE_MUTATORS[name](text, rng)
            if result is not None:
                text, detail = result
                labels.append(f"{name}({detail})")
                break
    return text, "+".join(labels) or "unchanged"


# ---- whole modules ---------------------------------------------------------------------------

HEADER = "# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n@I.ir_module\nclass Module:\n"


def no_kernels(rng):
    body = """    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        return x
"""
    return HEADER + body, ["--input", "2x3xf32=1"]


def vector_dtype(rng):
    dtype = rng.choice(("float64x4", "float32x8", "int32x4", "float16x2"))
    body = f"""    @R.function
    def main(x: R.Tensor((4,), dtype="{dtype}")) -> R.Tensor((4,), dtype="{dtype}"):
        y: R.Tensor((4,), dtype="{dtype}") = R.add(x, x)
        return y
"""
    return HEADER + body, ["--input", "4xf32=1"]


def literal_range(rng):
    dtype, value = rng.choice((("int8", 300), ("int32", 10 ** 26), ("uint8", -1), ("int64", 2 ** 64),
                               ("float16", 1e300), ("bool", 7)))
    body = f"""    @R.function
    def main(x: R.Tensor((4,), dtype="{dtype}")) -> R.Tensor((4,), dtype="{dtype}"):
        y: R.Tensor((4,), dtype="{dtype}") = R.add(x, R.const({value}, "{dtype}"))
        return y
"""
    short = {"int8": "i8", "int32": "i32", "uint8": "u8", "int64": "i64", "float16": "f16", "bool": "i1"}[dtype]
    return HEADER + body, ["--input", f"4x{short}=1"]


GENERATORS = {"no-kernels": no_kernels, "vector-dtype": vector_dtype, "literal-range": literal_range}
