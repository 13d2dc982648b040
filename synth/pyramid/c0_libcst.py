"""C0's libcst scanner (``--scanner libcst``): the same import records as the ast scanner,
each with why it is optional (``function``, ``try``, ``type_checking``, ``version_check``)
or None. Imported only when selected, so libcst loads only then."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import MetadataWrapper, PositionProvider

#: (line, module, relative level, why optional or None)
Found = tuple[int, str, int, str | None]


def catches(handlers: Sequence[cst.ExceptHandler], optional: Collection[str]) -> bool:
    """Does one of ``handlers`` catch an ImportError (or a broader class)?"""
    for h in handlers:
        if h.type is None:
            return True
        kinds = ([e.value for e in h.type.elements] if isinstance(h.type, cst.Tuple)
                 else [h.type])
        for k in kinds:
            name = get_full_name_for_node(k) or ""
            if name.rsplit(".", 1)[-1] in optional:
                return True
    return False


class _VersionCheck(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in ("version_info", "platform"):
            self.found = True


def is_version_check(test: cst.BaseExpression) -> bool:
    """Does ``test`` look at ``sys.version_info`` or ``sys.platform``?"""
    visitor = _VersionCheck()
    test.visit(visitor)
    return visitor.found


class Collector(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, optional: Collection[str]) -> None:
        super().__init__()
        self.optional = optional
        self.found: list[Found] = []
        # Statement nodes whose nested bodies are optional, and why.
        self.why: list[str | None] = [None]

    def _line(self, node: cst.CSTNode) -> int:
        return int(self.get_metadata(PositionProvider, node).start.line)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = get_full_name_for_node(alias.name) or ""
            self.found.append((self._line(node), name, 0, self.why[-1]))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = get_full_name_for_node(node.module) if node.module else ""
        self.found.append((self._line(node), module or "", len(node.relative), self.why[-1]))

    # Function bodies run only when called: their imports are "function".
    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.why.append(self.why[-1] or "function")
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.why.pop()

    # try: body (and else) optional when a handler catches ImportError & co.
    def visit_Try(self, node: cst.Try) -> bool:
        outer = self.why[-1]
        self.why.append(outer or ("try" if catches(node.handlers, self.optional) else None))
        node.body.visit(self)
        if node.orelse is not None:
            node.orelse.visit(self)
        self.why.pop()
        for h in node.handlers:
            h.visit(self)
        if node.finalbody is not None:
            node.finalbody.visit(self)
        return False

    def visit_If(self, node: cst.If) -> bool:
        outer = self.why[-1]
        body_why: str | None
        else_why: str | None
        name = get_full_name_for_node(node.test) or ""
        if name.rsplit(".", 1)[-1] == "TYPE_CHECKING":
            body_why, else_why = outer or "type_checking", outer
        elif is_version_check(node.test):
            body_why = else_why = outer or "version_check"
        else:
            body_why = else_why = outer
        self.why.append(body_why)
        node.body.visit(self)
        self.why.pop()
        if node.orelse is not None:
            self.why.append(else_why)
            if isinstance(node.orelse, cst.If):
                self.visit_If(node.orelse)
            else:
                node.orelse.visit(self)
            self.why.pop()
        return False


def scan(source: str, rel: str, optional: Collection[str]) -> list[Found]:
    """Every import statement of ``source`` (the file ``rel``), in source order."""
    module = cst.parse_module(source)
    collector = Collector(optional)
    MetadataWrapper(module, unsafe_skip_copy=True).visit(collector)
    return collector.found
