"""The conventions a person's words are read by: their locale, and the date just given.

``--locale`` (or ``FORMCTL_LOCALE``) names the locale, ``en-GB`` or ``en_US``; without one it
comes from the environment (``LC_ALL``, ``LC_MESSAGES``, ``LANG``: ``en_GB.UTF-8`` is
``en-GB``). It decides the order of day and month in ``03/11/2026`` (never guessed: with no
locale known, such a date is asked again), the region a phone number without ``+44`` belongs
to, and the decimal separator of an amount.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import date

# Regions that write the month first in a numeric date (03/11/2026 is March 11 there).
_MONTH_FIRST = frozenset({"US", "PH", "FM", "MH", "PW", "AS", "GU", "MP", "PR", "UM", "VI", "BZ"})
# Languages that write an amount's decimals after a comma (12,40).
_DECIMAL_COMMA = frozenset("de fr es it nl pt da sv nb nn fi pl cs sk hu ro tr ru uk el id".split())
_LOCALE = re.compile(r"^([A-Za-z]{2,3})(?:[-_]([A-Za-z]{2}|\d{3}))?(?:[.@].*)?$")


def normalise_locale(text: str | None) -> str | None:
    """``en_GB.UTF-8`` → ``en-GB``; ``C``, ``POSIX``, empty or unreadable → None."""
    if not text or text.strip().upper() in ("C", "POSIX", "C.UTF-8", "C.UTF8"):
        return None
    m = _LOCALE.match(text.strip())
    if m is None:
        return None
    language, region = m.group(1).lower(), m.group(2)
    return f"{language}-{region.upper()}" if region else language


def locale_from_env(environ: Mapping[str, str] | None = None) -> str | None:
    """The locale the environment names: ``FORMCTL_LOCALE``, else ``LC_ALL``, ``LC_MESSAGES``, ``LANG``."""
    env = os.environ if environ is None else environ
    for name in ("FORMCTL_LOCALE", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name)
        if value:
            return normalise_locale(value)
    return None


@dataclass(frozen=True, slots=True)
class ReadingContext:
    """What a reader needs besides the words.

    ``locale``: ``en-GB``-style, or None when unknown (then day/month order is never assumed and
    a phone number needs its country code unless it reads the same everywhere).
    ``previous_date``: the date given just before in the conversation, so "the next day",
    "same day" or "the 11th" are read from it (and said back as the date they make).
    ``started``: the day the form was started (the instance's own date, not a clock), so a date
    written without its year ("9 March") is placed in the year nearest it, and said back.
    """

    locale: str | None = None
    previous_date: date | None = None
    started: date | None = None  # the day the form was started: a date without its year is placed near it

    @property
    def language(self) -> str:
        return (self.locale or "en").split("-")[0]

    @property
    def region(self) -> str | None:
        parts = (self.locale or "").split("-")
        return parts[1] if len(parts) > 1 and parts[1].isalpha() else None

    @property
    def date_order(self) -> str | None:
        """``DMY`` or ``MDY`` for a numeric date, or None when the locale does not say."""
        region = self.region
        if region is None:
            return None
        return "MDY" if region in _MONTH_FIRST else "DMY"

    @property
    def decimal_separator(self) -> str:
        return "," if self.language in _DECIMAL_COMMA else "."

    def after(self, day: date | None) -> ReadingContext:
        """This context with ``day`` as the date just given (a no-op for None)."""
        return self if day is None else replace(self, previous_date=day)
