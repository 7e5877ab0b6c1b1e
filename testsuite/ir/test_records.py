"""Value classes (relax/records.py): a `@record` behaves as `@dataclass(frozen=True)` does,
and `@record(mutable=True)` as `@dataclass`, checked side by side with the dataclass of
the same body, on generated field lists."""

import dataclasses
import copy
import inspect
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relax.records import record

NAMES = st.lists(st.sampled_from(["a", "b", "c", "shape", "dtype", "name", "size"]), unique=True, max_size=5)


def _pair(names, defaults: int, factories: int, eq: bool = True, factory=tuple, mutable: bool = False):
    """The same class body twice: as a frozen dataclass and as a record. The last
    `defaults` fields have a default, of them the last `factories` a default_factory."""
    def body():
        annotations = {name: "object" for name in names}
        namespace = {"__annotations__": annotations, "__doc__": "A class."}
        for index, name in enumerate(names):
            from_end = len(names) - index
            if from_end <= factories:
                namespace[name] = dataclasses.field(default_factory=factory)
            elif from_end <= defaults:
                namespace[name] = index
        return type("Value", (), namespace)
    return dataclasses.dataclass(frozen=not mutable, eq=eq)(body()), record(eq=eq, mutable=mutable)(body())


@settings(max_examples=80, deadline=None)
@given(NAMES, st.integers(0, 5), st.integers(0, 5), st.booleans(), st.booleans(), st.data())
def test_a_record_behaves_as_the_dataclass(names, defaults, factories, eq, mutable, data):
    defaults, factories = min(defaults, len(names)), min(factories, defaults, len(names))
    classic, value = _pair(names, defaults, factories, eq=eq, mutable=mutable)
    required = len(names) - defaults
    args = data.draw(st.lists(st.integers(-3, 3), min_size=required, max_size=len(names)))
    made = classic(*args), value(*args)
    again = classic(*args), value(*args)
    assert repr(made[1]) == repr(made[0])
    assert [getattr(made[1], n) for n in names] == [getattr(made[0], n) for n in names]
    assert (made[1] == again[1]) == (made[0] == again[0]) and (made[1] != again[1]) == (made[0] != again[0])
    assert (value.__hash__ is None) == (classic.__hash__ is None)
    if eq and not mutable:
        assert hash(made[1]) == hash(made[0]) and hash(again[1]) == hash(made[1])
    assert [f.name for f in dataclasses.fields(value)] == [f.name for f in dataclasses.fields(classic)]
    assert dataclasses.asdict(made[1]) == dataclasses.asdict(made[0])
    assert [p.kind for p in inspect.signature(value).parameters.values()] == \
        [p.kind for p in inspect.signature(classic).parameters.values()]
    for copied in (copy.copy(made[1]), copy.deepcopy(made[1])):
        assert type(copied) is value and dataclasses.astuple(copied) == dataclasses.astuple(made[1])
    if names:
        changed = dataclasses.replace(made[1], **{names[0]: "new"})
        assert getattr(changed, names[0]) == "new" and getattr(made[1], names[0]) != "new"
        if mutable:
            setattr(made[1], names[0], "set")
            assert getattr(made[1], names[0]) == "set"


@record
class Pair:
    first: int
    second: tuple = ()


def test_records_pickle():
    item = Pair(1, (2, 3))
    assert pickle.loads(pickle.dumps(item)) == item


def test_factories_give_each_instance_its_own_value():
    _, value = _pair(["a", "b"], 1, 1, factory=list)
    one, two = value(1), value(2)
    assert one.b == [] and one.b is not two.b
    assert value(1, [3]).b == [3]


def test_records_cannot_be_changed():
    _, value = _pair(["a"], 0, 0)
    item = value(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        item.a = 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        del item.a
    with pytest.raises(dataclasses.FrozenInstanceError):
        item.other = 1
    assert item.a == 1


def test_equality_needs_the_same_class():
    first, _ = _pair(["a"], 0, 0)
    _, second = _pair(["a"], 0, 0)
    _, third = _pair(["a"], 0, 0)
    assert second(1) != third(1) and second(1) == second(1)
    assert second(1) != first(1)


def test_eq_false_compares_by_identity():
    _, value = _pair(["a"], 0, 0, eq=False)
    one = value(1)
    assert one != value(1) and one == one and len({one, value(1)}) == 2


def test_a_bodys_methods_are_kept():
    @record
    class Named:
        name: str
        size: int = 0

        def __repr__(self):
            return f"<{self.name}>"

        def __eq__(self, other):
            return isinstance(other, Named) and other.name == self.name

    assert repr(Named("x")) == "<x>"
    assert Named("x", 1) == Named("x", 2)
    assert hash(Named("x", 1)) == hash(("x", 1))  # as a frozen dataclass hashes then: by every field

    @record
    class Keyed:
        name: str

        def __hash__(self):
            return 7

    assert hash(Keyed("y")) == 7


def test_a_record_that_holds_itself_shows_dots():
    @record(mutable=True)
    class Cell:
        name: str
        next: object = None

    cell = Cell("a")
    cell.next = cell
    assert repr(cell) == "test_a_record_that_holds_itself_shows_dots.<locals>.Cell(name='a', next=...)"


def test_post_init_runs():
    @record
    class Checked:
        size: int

        def __post_init__(self):
            if self.size < 0:
                raise ValueError("negative")

    assert Checked(2).size == 2
    with pytest.raises(ValueError):
        Checked(-1)


def test_a_field_without_default_after_one_with_is_refused():
    with pytest.raises(TypeError):
        @record
        class Wrong:
            a: int = 0
            b: int


def test_a_record_may_not_define_setattr():
    with pytest.raises(TypeError):
        @record
        class Wrong:
            a: int

            def __setattr__(self, name, value):  # one that would let changes through
                object.__setattr__(self, name, value)
