"""A rule's refusal: a documented error code and the words that explain it.

Domain checks return a :class:`Refusal` (or ``None`` when the rule is met) instead of
raising: the application turns one into its error (with the HTTP status the code has), the
auditor into a finding of its own wording. Codes are the interface's (interface 2.8).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Refusal:
    code: str
    message: str
