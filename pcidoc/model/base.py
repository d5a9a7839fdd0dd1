"""Base classes shared by every pcidoc data model.

Two rules hold for every model in this package:

* Models are pure data: no I/O, no imports of collectors, probes or UI code.
* A fact that could not be learned is ``None`` and its field name is a key of the object's
  ``unavailable`` mapping, whose value says why ("needs root", "NVML: NOT_SUPPORTED", "not in
  the pasted output", ...). pcidoc never fills in a guess.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Model(BaseModel):
    """Base of all pcidoc models.

    Unknown keys are ignored so that a capture written by a newer *minor* version of the same
    schema still loads; missing required keys and wrong types are validation errors.
    """

    model_config = ConfigDict(extra="ignore", populate_by_name=True, defer_build=True)

    @classmethod
    def model_rebuild(
        cls,
        *,
        force: bool = False,
        raise_errors: bool = True,
        _parent_namespace_depth: int = 2,
        _types_namespace: Any = None,
    ) -> bool | None:
        """Complete the class from its stored schema (:mod:`pcidoc.model.compiled`) when the
        store matches the running code; otherwise let pydantic build it."""
        if not force and not cls.__pydantic_complete__:
            from pcidoc.model.compiled import install

            if install(cls):
                return True
        return super().model_rebuild(
            force=force,
            raise_errors=raise_errors,
            _parent_namespace_depth=_parent_namespace_depth + 1,
            _types_namespace=_types_namespace,
        )


class FactModel(Model):
    """A model whose null fields carry the reason they are null."""

    unavailable: dict[str, str] = Field(
        default_factory=dict,
        description="Field name -> why that field is null (never a guess in its place).",
    )

    def mark_unavailable(self, field: str, reason: str) -> None:
        """Record that ``field`` is unknown and why; keeps the first reason given.

        Args:
            field: Name of the field (or a dotted sub-key) that stays ``None``.
            reason: Short human-readable reason, e.g. ``"needs root"``.
        """
        self.unavailable.setdefault(field, reason)

    def why(self, field: str) -> str | None:
        """Return the recorded reason ``field`` is unknown, if any."""
        return self.unavailable.get(field)
