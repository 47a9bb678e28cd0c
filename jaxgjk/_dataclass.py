"""Frozen dataclasses registered as JAX pytrees."""

from __future__ import annotations

import dataclasses

import jax


def pytree_dataclass(cls):
    """Make `cls` a frozen dataclass whose fields are pytree children (``static`` metadata: aux data)."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    return jax.tree_util.register_dataclass(cls)


def static_field(**kwargs):
    """A dataclass field that is part of the pytree structure (hashable, not traced)."""
    return dataclasses.field(metadata={"static": True}, **kwargs)
