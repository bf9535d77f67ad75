"""Language identification: fastText models read and predicted bit for bit, and the identifier stages use."""
