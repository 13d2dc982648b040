"""tinynet: a two-layer MLP in plain numpy, trained with full-batch gradient descent."""
