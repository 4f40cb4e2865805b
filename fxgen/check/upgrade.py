"""Format versions: a spec of a newer format than this fxgen is refused with what to do, and a
spec of an older one is turned into the current one here, before the schema check (the schema and
``fxgen.spec.model`` describe only the current version)."""

from __future__ import annotations

from fxgen._errors import SpecError
from fxgen.read.reader import Document
from fxgen.spec.model import FORMAT_VERSION

__all__ = ["check_version"]


def check_version(doc: Document) -> None:
    """Refuse a newer format than this fxgen knows. Older versions are upgraded here when there
    are any: ``doc.data = _upgrade(doc.data)`` before the schema check (formats 1 and 2 are both
    current: 2 only adds to 1)."""
    data = doc.data
    if not isinstance(data, dict):
        return  # the schema reports it
    version = data.get("fxgen")
    if isinstance(version, (int, float)) and not isinstance(version, bool) and version > FORMAT_VERSION:
        raise SpecError.at(
            doc.locate(("fxgen",)),
            f"spec format version {version} is newer than this fxgen supports ({FORMAT_VERSION}); "
            "upgrade fxgen (pip install -U fxgen)",
        )
