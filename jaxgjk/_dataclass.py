"""Frozen dataclasses registered as JAX pytrees."""

from __future__ import annotations

import dataclasses

import jax


def pytree_dataclass(cls):
    """Make `cls` a frozen dataclass whose fields are pytree children (``static`` metadata: aux data).

    Registered as a custom node, not with `jax.tree_util.register_dataclass`: in jaxlib 0.10 the
    structures of two dataclass nodes with the same field names compare equal whatever their classes
    (`Capsule` and `Cylinder` both hold `radius, half_length`), so a `jit` cache could hand one class the
    program traced for the other. A custom node's structure compares its class."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    fields = dataclasses.fields(cls)
    data = tuple(field.name for field in fields if not field.metadata.get("static"))
    static = tuple(field.name for field in fields if field.metadata.get("static"))
    keys = tuple(jax.tree_util.GetAttrKey(name) for name in data)

    def flatten_with_keys(node):
        return tuple((key, getattr(node, name)) for key, name in zip(keys, data, strict=True)), _aux(node)

    def flatten(node):
        return tuple(getattr(node, name) for name in data), _aux(node)

    def _aux(node):
        return tuple(getattr(node, name) for name in static)

    def unflatten(aux, children):
        node = object.__new__(cls)  # children may be placeholders of a transformation, never checked
        for name, value in zip(data + static, tuple(children) + aux, strict=True):
            object.__setattr__(node, name, value)
        return node

    jax.tree_util.register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)
    return cls


def static_field(**kwargs):
    """A dataclass field that is part of the pytree structure (hashable, not traced)."""
    return dataclasses.field(metadata={"static": True}, **kwargs)


def entry(field: str, index) -> property:
    """A read-only property, ``getattr(self, field)[index]``: one of the values that a pytree dataclass
    keeps together in one array (a loop's carry of fewer, larger leaves; the class documents them)."""
    return property(lambda self: getattr(self, field)[index])
