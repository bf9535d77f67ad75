"""Quality classifiers: fastText recipes, training with a report, scoring and selection."""
