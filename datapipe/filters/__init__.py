"""Heuristic document filters and line modifiers (Gopher, C4, FineWeb, RefinedWeb as DCLM rebuilt it).

Each rule is a small frozen dataclass with one job: called on a :class:`FilterDoc`, it returns ``None`` to keep
the document or a short reason to remove it; a line modifier may also rewrite ``doc.text``. Thresholds are the
dataclass fields, so a preset's rules can be overridden by name from the mixture YAML.
"""
