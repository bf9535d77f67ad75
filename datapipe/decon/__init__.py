"""Decontamination against evaluation sets (stage ``decon``)."""
