"""Frozen dataclasses that are made by the hundred thousand: the same class, a cheaper
``__init__``.

A frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__``
(to get past the class's own frozen ``__setattr__``): about 3 µs for a dozen fields, where
giving the instance its ``__dict__`` in one call takes about 1 µs. On a 100,000-record
audit log distill makes ~150,000 outcomes and ~70,000 steps, so the difference is a good
part of a second (the simple commands themselves are named tuples:
:class:`synth.distill.shell.SimpleCommand`). :func:`cheap_init` swaps in such an ``__init__``,
with the same signature and defaults; everything else (equality, hashing, ``repr``,
``match``, ``dataclasses.replace``, the frozen ``__setattr__``) stays the dataclass's own.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def cheap_init(cls: type[T]) -> type[T]:
    """Give the frozen dataclass ``cls`` an ``__init__`` that sets its fields as one
    ``__dict__``. Refused (TypeError) for what that cannot express: a class that is
    not a frozen dataclass, uses ``__slots__`` or ``__post_init__``, or has a field with a
    ``default_factory`` or ``init=False``."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen:
        raise TypeError(f"{cls.__name__} is not a frozen dataclass")
    if "__slots__" in cls.__dict__ or hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: __slots__ or __post_init__ is not supported")
    names: list[str] = []
    positional: list[str] = []
    keyword: list[str] = []
    defaults: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init or f.default_factory is not dataclasses.MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: init=False or a default_factory")
        param = f.name
        if f.default is not dataclasses.MISSING:
            defaults[f"_default_{f.name}"] = f.default
            param += f"=_default_{f.name}"
        (keyword if f.kw_only else positional).append(param)
        names.append(f.name)
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    body = ", ".join(f"{n!r}: {n}" for n in names)
    source = f"def __init__({signature}):\n    _set(self, '__dict__', {{{body}}})\n"
    namespace: dict[str, Any] = {}
    # The source is made of field names only. A new instance's __dict__ is empty: it is
    # replaced by one dict display (past the frozen __setattr__), not filled from kwargs.
    exec(source, {**defaults, "_set": object.__setattr__}, namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
