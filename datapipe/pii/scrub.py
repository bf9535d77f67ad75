"""PII scrubbing: email addresses, IP addresses and phone numbers replaced with placeholders.

The placeholders are Dolma's (``|||EMAIL_ADDRESS|||``, ``|||IP_ADDRESS|||``, ``|||PHONE_NUMBER|||``), so a model
learns one token pattern rather than a fake address. Documentation values stay: the RFC 5737 and RFC 3849 address
blocks (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32), loopback and unspecified addresses, and
emails at the RFC 2606 names (example.com/.net/.org, and the .example, .test, .invalid, .localhost domains). A
candidate IP must parse as one (``ipaddress``) and must not be part of a longer dotted number (a version string).
Phone numbers need separators between the groups (``555-123-4567``, ``(555) 123 4567``, ``+44 20 7946 0958``),
so plain long numbers are left alone. Nothing is removed; counts per kind go to the stage's counters.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter

from datapipe.config.stages import EMAIL_PLACEHOLDER as EMAIL
from datapipe.config.stages import IP_PLACEHOLDER as IP
from datapipe.config.stages import PHONE_PLACEHOLDER as PHONE
from datapipe.config.stages import PIIConfig

KINDS = ("email", "ip", "phone")

_EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@((?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,})(?![\w-])")
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:.])(?=[0-9A-Fa-f:]*:[0-9A-Fa-f]*:)[0-9A-Fa-f:]{2,39}(?:%\w+)?(?![\w:])")
_PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{2,4}\)[ .-]?|\d{2,4}[ .-])\d{3,4}[ .-]\d{3,4}(?![\w]|[.-]\d)"
)
_DOC_DOMAINS = ("example.com", "example.net", "example.org")
_DOC_TLDS = ("example", "test", "invalid", "localhost")
_DOC_NETS = [
    ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
]


def _documentation_domain(domain: str) -> bool:
    d = domain.lower()
    return (
        d in _DOC_DOMAINS
        or d.endswith(tuple("." + x for x in _DOC_DOMAINS))
        or d.rsplit(".", 1)[-1] in _DOC_TLDS
    )


def _ip_kept(text: str) -> bool | None:
    """None when ``text`` is no IP address; else whether it is a documentation/loopback/unspecified one."""
    try:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    return ip.is_loopback or ip.is_unspecified or any(ip in net for net in _DOC_NETS)


ALL_KINDS = PIIConfig()


def scrub(text: str, config: PIIConfig = ALL_KINDS) -> tuple[str, Counter]:
    """The text with PII replaced, and counts: ``email``, ``ip``, ``phone`` replaced; ``*_kept`` documentation."""
    counts: Counter = Counter()

    def sub(pattern: re.Pattern, kind: str, placeholder: str, kept) -> None:
        nonlocal text

        def repl(m: re.Match) -> str:
            verdict = kept(m)
            if verdict is None:
                return m.group(0)
            if verdict:
                counts[f"{kind}_kept"] += 1
                return m.group(0)
            counts[kind] += 1
            return placeholder

        text = pattern.sub(repl, text)

    if config.email:
        sub(_EMAIL, "email", EMAIL, lambda m: _documentation_domain(m.group(1)))
    if config.ip:
        sub(_IPV6, "ip", IP, lambda m: _ip_kept(m.group(0)))
        sub(_IPV4, "ip", IP, lambda m: _ip_kept(m.group(0)))
    if config.phone:
        sub(_PHONE, "phone", PHONE, lambda m: False)
    return text, counts
