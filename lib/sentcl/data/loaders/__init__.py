"""Loaders, one module per family of formats; importing this package registers them all."""
