"""cheap_init keeps a frozen dataclass what it was, with a one-call __init__."""

from __future__ import annotations

import dataclasses
import pickle

import msgspec
import pytest

from synth.distill.steps import PipInstall, ReadOnly, VenvCreate
from synth.formats.plan import CommandOutcome
from synth.util.frozen import cheap_init


@dataclasses.dataclass(frozen=True)
class _Plain:
    a: int
    b: str = "x"
    c: tuple[int, ...] = ()
    d: int | None = dataclasses.field(default=None, kw_only=True)


@cheap_init
@dataclasses.dataclass(frozen=True)
class _Cheap:
    a: int
    b: str = "x"
    c: tuple[int, ...] = ()
    d: int | None = dataclasses.field(default=None, kw_only=True)


@pytest.mark.parametrize(("args", "kwargs"), [
    ((1,), {}), ((1, "y"), {}), ((1,), {"c": (2, 3), "d": 4}), ((), {"a": 5, "b": "z"})])
def test_same_fields_equality_and_hash_as_the_dataclass(args: tuple, kwargs: dict) -> None:
    plain, cheap = _Plain(*args, **kwargs), _Cheap(*args, **kwargs)
    assert dataclasses.astuple(plain) == dataclasses.astuple(cheap)
    assert repr(plain).replace("_Plain", "_Cheap") == repr(cheap)
    assert cheap == _Cheap(*args, **kwargs)
    assert hash(cheap) == hash(_Cheap(*args, **kwargs))
    assert dataclasses.replace(cheap, b="w").b == "w"
    assert pickle.loads(pickle.dumps(cheap)) == cheap


def test_the_signature_is_the_dataclass_s() -> None:
    with pytest.raises(TypeError):
        _Cheap()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        _Cheap(1, "x", (), 4)  # type: ignore[misc]  # d is keyword-only
    with pytest.raises(TypeError):
        _Cheap(1, e=2)  # type: ignore[call-arg]


def test_instances_stay_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        _Cheap(1).a = 2  # type: ignore[misc]


def test_refuses_what_it_cannot_express() -> None:
    @dataclasses.dataclass
    class Mutable:
        a: int

    @dataclasses.dataclass(frozen=True)
    class Factory:
        a: list[int] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True)
    class Post:
        a: int

        def __post_init__(self) -> None:
            pass

    for cls in (Mutable, Factory, Post):
        with pytest.raises(TypeError):
            cheap_init(cls)


def test_the_hot_classes_use_it() -> None:
    # The classes distill makes one of per audited command (the outcome is a file's type:
    # a frozen msgspec Struct, made in C, untracked by the cyclic collector).
    for cls in (PipInstall, ReadOnly, VenvCreate):
        assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"
        assert "_set" in cls.__init__.__code__.co_names  # the one-call __dict__
    assert issubclass(CommandOutcome, msgspec.Struct)
    assert CommandOutcome.__struct_config__.frozen and not CommandOutcome.__struct_config__.gc
