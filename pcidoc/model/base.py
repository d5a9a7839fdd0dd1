"""Base classes shared by every pcidoc data model.

Two rules hold for every model in this package:

* Models are pure data: no I/O, no imports of collectors, probes or UI code.
* A fact that could not be learned is ``None`` and its field name is a key of the object's
  ``unavailable`` mapping, whose value says why ("needs root", "NVML: NOT_SUPPORTED", "not in
  the pasted output", ...). pcidoc never fills in a guess.

The classes are written for pydantic. At run time they are light classes over the schemas
pydantic generated for them (:mod:`pcidoc.model.compiled`, :mod:`pcidoc.model.lite`) whenever
the stored schemas match these sources, and pydantic models otherwise; both validate and
serialize alike. Model modules take ``Field`` from here, never from pydantic, and ``Any`` and
``Literal`` from here, never from typing: pydantic models evaluate the annotations that name
them, light classes never do, and importing typing cost ~3 ms of every start.
"""

from __future__ import annotations

from pcidoc.model.compiled import lite_mode

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time

if TYPE_CHECKING or not lite_mode():
    from typing import Any, Literal

    from pydantic import BaseModel as _Base
    from pydantic import ConfigDict, Field
else:
    from pcidoc.model.lite import ANNOTATION_ONLY as Any
    from pcidoc.model.lite import ANNOTATION_ONLY as Literal
    from pcidoc.model.lite import ConfigDict, Field
    from pcidoc.model.lite import LiteModel as _Base

__all__ = ["Any", "FactModel", "Field", "Literal", "Model"]


class Model(_Base):
    """Base of all pcidoc models.

    Unknown keys are ignored so that a capture written by a newer *minor* version of the same
    schema still loads; missing required keys and wrong types are validation errors.
    """

    model_config = ConfigDict(
        extra="ignore", populate_by_name=True, defer_build=True, protected_namespaces=()
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
