"""fullwindow's relation as a node of a Spark Connect client's logical plan."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from pyspark.sql.connect.plan import LogicalPlan

from fullwindow._compat import connect_plan_observations
from fullwindow._connect.connect_pb2 import FullWindowRelation  # type: ignore[attr-defined]


class FullWindowPlan(LogicalPlan):
    """A ``spark.connect.Relation`` whose ``extension`` is a :class:`FullWindowRelation` over
    ``child`` (serialized into it); ``fill(relation, client)`` sets the operation. ``others``
    are further input plans the operation holds (coGroup's right side)."""

    def __init__(self, child: LogicalPlan, fill: Callable[[FullWindowRelation, Any], None],
                 others: Sequence[LogicalPlan] = ()) -> None:
        super().__init__(child)
        self._fill = fill
        self._others = list(others)

    def plan(self, session: Any) -> Any:
        assert self._child is not None
        rel = FullWindowRelation()
        rel.input = self._child.plan(session).SerializeToString()
        self._fill(rel, session)
        out = self._create_proto_relation()
        out.extension.Pack(rel)
        return out

    @property
    def observations(self) -> dict:
        merged = connect_plan_observations(super())
        for other in self._others:
            merged.update(connect_plan_observations(other))
        return merged

    def print(self, indent: int = 0) -> str:
        return f"{' ' * indent}<FullWindowRelation>\n" + (
            self._child.print(indent + LogicalPlan.INDENT) if self._child else "")


class FullWindowCallPlan(LogicalPlan):
    """A ``spark.connect.Relation`` whose extension is a FullWindowRelation with no input that
    asks the server something (``fill(relation)`` sets which: server info, a recovery call);
    the server answers with one row. ``name`` is its line in a printed plan."""

    def __init__(self, fill: Callable[[FullWindowRelation], None], name: str) -> None:
        super().__init__(None)
        self._fill, self._name = fill, name

    def plan(self, session: Any) -> Any:
        rel = FullWindowRelation()
        self._fill(rel)
        out = self._create_proto_relation()
        out.extension.Pack(rel)
        return out

    def print(self, indent: int = 0) -> str:
        return f"{' ' * indent}<{self._name}>\n"
