"""The jagged token cache (Levanter's layout in TensorStore zarr3) and the mixture manifest."""
