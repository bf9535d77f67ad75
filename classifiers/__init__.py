"""fastText quality-classifier recipes (training data spec, hyperparameters) and how to train them."""
