"""A mypy plugin that types the DataFrame methods ``import fullwindow`` adds.

Enable it in the mypy configuration::

    [tool.mypy]
    plugins = ["fullwindow.mypy_plugin"]

``df.fullWindowPartition()`` is then a ``PartitionWindowedDataFrame`` and ``df.keyBy(*cols: str)``
a ``KeyedDataFrame``. Without the plugin mypy resolves both names through pyspark's
``DataFrame.__getattr__`` (a column lookup) and reports the call as an error.
"""
from __future__ import annotations

from functools import partial
from typing import Callable, Optional

from mypy.nodes import ARG_STAR, TypeInfo
from mypy.plugin import AttributeContext, Plugin
from mypy.types import CallableType, Instance, Type

_DATAFRAMES = frozenset({"pyspark.sql.dataframe.DataFrame",
                         "pyspark.sql.classic.dataframe.DataFrame",
                         "pyspark.sql.connect.dataframe.DataFrame"})
_RETURNS = {"fullWindowPartition": ("fullwindow.partition", "PartitionWindowedDataFrame"),
            "keyBy": ("fullwindow.keyed", "KeyedDataFrame")}


def _method_type(name: str, ctx: AttributeContext) -> Type:
    api = ctx.api
    module, cls = _RETURNS[name]
    tree = api.modules.get(module)  # type: ignore[attr-defined]
    symbol = tree.names.get(cls) if tree is not None else None
    if symbol is None or not isinstance(symbol.node, TypeInfo):
        return ctx.default_attr_type  # fullwindow is not part of this program
    ret = Instance(symbol.node, [])
    function = api.named_generic_type("builtins.function", [])
    if name == "keyBy":
        text = api.named_generic_type("builtins.str", [])
        return CallableType([text], [ARG_STAR], ["cols"], ret, function, name=name)
    return CallableType([], [], [], ret, function, name=name)


class FullWindowPlugin(Plugin):
    def get_attribute_hook(self, fullname: str) -> Optional[Callable[[AttributeContext], Type]]:
        cls, _, name = fullname.rpartition(".")
        if cls in _DATAFRAMES and name in _RETURNS:
            return partial(_method_type, name)
        return None


def plugin(version: str) -> type[Plugin]:
    return FullWindowPlugin
