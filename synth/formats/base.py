"""What every file format of synth shares: one frozen msgspec ``Struct`` per object of a file.

A format's types are its whole definition: :mod:`synth.formats.store` decodes a file into
them in one pass (msgspec checks the types, the required fields, the enums, the patterns and
the bounds while it reads), :mod:`synth.formats.schemas` generates the published JSON
Schemas from them, and the writers encode them. The field comments and ``Meta``
descriptions are the schemas' descriptions.

Conventions: a field with no default is required; an optional field defaults to ``None``
(absent and ``null`` read alike); a Struct whose absent fields are left out when it is
written sets ``omit_defaults``. A rule the types cannot say (a field required when another
has some value) is checked by the Struct's ``__post_init__`` (msgspec reports its
``ValueError`` at the object's JSON path) and stated in its :data:`SCHEMA_EXTRA` for the
schema.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Self, TypeVar

import msgspec
from msgspec import Meta, Struct

from synth.errors import InputFileError

T = TypeVar("T")

#: A sha256 digest as synth writes it.
Digest = Annotated[str, Meta(pattern="^[0-9a-f]{64}$",
                             description="a sha256 digest: 64 lowercase hex digits")]
#: A run's id: ``YYYYmmdd-HHMMSS-<6 hex>`` (UTC).
RunId = Annotated[str, Meta(pattern=r"^\d{8}-\d{6}-[0-9a-f]{6}$")]
#: A UTC time, ISO 8601 with a ``Z``.
Timestamp = Annotated[str, Meta(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")]
#: A count (never negative).
Count = Annotated[int, Meta(ge=0)]


class Part(Struct, frozen=True):
    """A typed object of a file. ``encodable()`` is what a writer encodes (itself; a type
    that leaves a key out says so there), ``to_json()`` its JSON form as builtins,
    ``from_json(doc)`` one read from a decoded document, checked."""

    #: JSON Schema keywords the types cannot say (a conditional rule), merged into the
    #: object's schema by :mod:`synth.formats.schemas`; ``__post_init__`` enforces them.
    SCHEMA_EXTRA: ClassVar[dict[str, Any] | None] = None

    def encodable(self) -> Any:
        return self

    def to_json(self) -> dict[str, Any]:
        """The JSON document, as ``json.loads`` of the written file gives it."""
        doc: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(self.encodable()))
        return doc

    @classmethod
    def from_json(cls, doc: Any) -> Self:
        """``doc`` (decoded JSON) as this type; ``msgspec.ValidationError`` if it is not."""
        return msgspec.convert(doc, cls)


class Document(Part, frozen=True, dict=True):
    """A file whose readers also want it as written: ``raw`` is the document the store
    decoded it from (fields no type here names included: an agent's extra claims, other
    writers' keys), or, for one made in code, its own JSON form. Not a field: never
    compared, encoded or part of the schema; a copy (``copy``, pickle,
    ``msgspec.structs.replace``) is one made in code."""

    @property
    def raw(self) -> Mapping[str, Any]:
        doc: Mapping[str, Any] | None = self.__dict__.get("_document")
        return doc if doc is not None else super().to_json()

    def to_json(self) -> dict[str, Any]:
        """The document as read (``raw``), whole."""
        return dict(self.raw)

    @classmethod
    def from_json(cls, doc: Any) -> Self:
        obj = super().from_json(doc)
        obj.keep_document(doc)
        return obj

    def keep_document(self, doc: Mapping[str, Any]) -> None:
        """Attach the document this was decoded from (the store does, once)."""
        self.__dict__["_document"] = doc


_MISSING = re.compile(r"^Object missing required field `(.*)`$")


def located(error: msgspec.ValidationError) -> str:
    """msgspec's validation error as ``$.path: what`` (the JSON path first, as the store's
    messages put it), a missing field worded as JSON Schema words it."""
    text = str(error)
    what, sep, where = text.rpartition(" - at `")
    if not sep:
        what, where = text, "$`"
    what = _MISSING.sub(r"'\1' is a required property", what)
    return f"{where[:-1]}: {what}"


def check_format(doc: Mapping[str, Any], newest: int, where: str, rel: str) -> None:
    """Refuse a document of a file ``rel`` with no integer ``format``, or one newer than
    ``newest`` (written by a newer synth): a clear message, before any other check."""
    fmt = doc.get("format")
    if not isinstance(fmt, int) or isinstance(fmt, bool):
        raise InputFileError(f"{where}: no integer `format` field; not a synth {rel}")
    if fmt > newest:
        raise InputFileError(
            f"{where}: format {fmt} is newer than this synth reads (<= {newest}).",
            hint="Upgrade synth to read it.")


def convert(doc: Any, cls: type[T], where: str, rel: str) -> T:
    """A decoded document as ``cls``; an :class:`InputFileError` naming ``where`` and the
    JSON path when it is not one."""
    try:
        return msgspec.convert(doc, cls)
    except msgspec.ValidationError as exc:
        raise InputFileError(f"{where}: not a valid {rel}: {located(exc)}") from None
